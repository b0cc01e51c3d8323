#pragma once
// What Kueue's admission means for the pods: each admitted PodSet's flavors (one per resource)
// give the node labels its pods must require and the tolerations they get, as Kueue does for the
// jobs it knows (it reads the ResourceFlavors named in status.admission). Pure; no I/O.

#include <map>
#include <string>

#include "common/status.h"
#include "operator/api/children.h"
#include "operator/kueue/workload_view.h"

namespace lockstep::kueue {

// By PodSet (= role) name. An error when the Workload has no admission, or names a flavor
// `flavors` lacks (not in the cache yet, or deleted), or two flavors of one PodSet ask for
// different values of one node label: the pods cannot be built as admitted.
StatusOr<std::map<std::string, api::RolePlacement>> PlacementsOf(
    const WorkloadView& workload, const std::map<std::string, Flavor>& flavors);

}  // namespace lockstep::kueue
