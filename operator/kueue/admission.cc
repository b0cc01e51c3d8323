#include "operator/kueue/admission.h"

#include <algorithm>
#include <set>

#include "operator/kueue/workload.h"

namespace lockstep::kueue {

StatusOr<std::map<std::string, api::RolePlacement>> PlacementsOf(
    const WorkloadView& workload, const std::map<std::string, Flavor>& flavors) {
  if (!workload.admission) {
    return FailedPreconditionError("workload " + workload.name + " has no admission");
  }
  std::map<std::string, api::RolePlacement> out;
  for (const PodSetAssignment& assignment : workload.admission->pod_sets) {
    api::RolePlacement& placement = out[assignment.name];
    placement.labels[std::string(kPodSetLabel)] = assignment.name;
    std::set<std::string> seen;  // a flavor usually covers several resources
    for (const auto& [resource, flavor_name] : assignment.flavors) {
      if (!seen.insert(flavor_name).second) continue;
      auto flavor = flavors.find(flavor_name);
      if (flavor == flavors.end()) {
        return NotFoundError("ResourceFlavor " + flavor_name + " (admitted for " + resource +
                             " of pod set " + assignment.name + ") is not known");
      }
      for (const auto& [key, value] : flavor->second.node_labels) {
        auto [it, added] = placement.node_selector.emplace(key, value);
        if (!added && it->second != value) {
          return InvalidArgumentError("pod set " + assignment.name + ": flavors ask for " + key +
                                      "=" + it->second + " and " + key + "=" + value);
        }
      }
      for (const nlohmann::json& t : flavor->second.tolerations) {
        auto& list = placement.tolerations;
        if (std::find(list.begin(), list.end(), t) == list.end()) list.push_back(t);
      }
    }
  }
  return out;
}

}  // namespace lockstep::kueue
