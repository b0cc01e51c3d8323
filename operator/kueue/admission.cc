#include "operator/kueue/admission.h"

#include <algorithm>
#include <set>

#include "operator/kueue/workload.h"

namespace lockstep::kueue {

nlohmann::json DomainTerms(const TopologyAssignment& topology) {
  using nlohmann::json;
  auto in = [](const std::string& key, json values) {
    return json{{"key", key}, {"operator", "In"}, {"values", std::move(values)}};
  };
  json terms = json::array();
  if (topology.levels.empty() || topology.domains.empty()) return terms;
  // Host names are unique: one term listing every assigned node.
  if (topology.levels.back() == kHostnameLabel) {
    std::set<std::string> hosts;
    for (const TopologyDomain& d : topology.domains) hosts.insert(d.values.back());
    terms.push_back({{"matchExpressions", json::array({in(kHostnameLabel, json(hosts))})}});
    return terms;
  }
  // A rack's name may repeat in another block: one term per domain, every level matched.
  for (const TopologyDomain& d : topology.domains) {
    json expressions = json::array();
    for (size_t i = 0; i < topology.levels.size() && i < d.values.size(); ++i) {
      expressions.push_back(in(topology.levels[i], json::array({d.values[i]})));
    }
    terms.push_back({{"matchExpressions", std::move(expressions)}});
  }
  return terms;
}

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
    if (assignment.topology) placement.node_terms = DomainTerms(*assignment.topology);
  }
  return out;
}

}  // namespace lockstep::kueue
