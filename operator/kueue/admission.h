#pragma once
// What Kueue's admission means for the pods: each admitted PodSet's flavors (one per resource)
// give the node labels its pods must require and the tolerations they get, as Kueue does for the
// jobs it knows (it reads the ResourceFlavors named in status.admission), and a topology
// assignment (TAS) the domains its nodes must be in. Pure; no I/O.

#include <map>
#include <string>

#include "common/status.h"
#include "operator/api/children.h"
#include "operator/kueue/workload_view.h"

namespace lockstep::kueue {

inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";

// The nodeSelectorTerms that keep a PodSet's pods inside the domains Kueue's topology-aware
// scheduling assigned: the nodes named, when the lowest level is the host name; else one term
// per domain matching its value at every level. Lockstep's gang scheduler then places the pods
// inside them by its own rules (Kueue's per-domain pod counts are not enforced).
nlohmann::json DomainTerms(const TopologyAssignment& topology);

// By PodSet (= role) name. An error when the Workload has no admission, or names a flavor
// `flavors` lacks (not in the cache yet, or deleted), or two flavors of one PodSet ask for
// different values of one node label: the pods cannot be built as admitted.
StatusOr<std::map<std::string, api::RolePlacement>> PlacementsOf(
    const WorkloadView& workload, const std::map<std::string, Flavor>& flavors);

}  // namespace lockstep::kueue
