#pragma once
// Gang placement as a pure function: a snapshot and a gang in, every pod's node or a reason out.
// All roles together, all or nothing. Thread-safe (reads the snapshot only).
//
// Policy (docs/scheduler.md):
//  - requiredTopologyKey: the whole gang in one domain of that key (hard);
//  - topologyKeys (coarse -> fine): at each level use the fewest domains, the best-fitting one
//    (least free capacity of the gang's primary resource) when one domain can hold the rest;
//  - nodes: best fit (least primary resource left after placement, then most pods, then name);
//  - replica indexes follow topology order (sorted by topology key values, then node name), so
//    neighbouring ranks share a rack.

#include <string>
#include <string_view>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

enum class PlacementFailure {
  kNone = 0,
  kInvalidRequest,         // e.g. a negative request
  kNoFeasibleNodes,        // every node excluded (NotReady, cordoned, taints, selectors)
  kInsufficientResources,  // total free capacity on feasible nodes is short
  kTopology,               // requiredTopologyKey: no single domain can hold the gang
  kFragmented,             // enough in total, but not in pod-sized pieces
  // Inter-pod constraints (pod_constraints.h): the one that excluded the most nodes for the
  // first pod that found none.
  kHostPort,
  kPodAffinity,
  kPodAntiAffinity,
  kTopologySpread,
  // A PersistentVolumeClaim (volumes.h): one that waits (e.g. unbound Immediate), or the one
  // that found no node for the first pod that found none.
  kVolumeBinding,
};

// CamelCase reason for the Scheduled=False condition, e.g. "InsufficientResources".
std::string_view PlacementFailureReason(PlacementFailure failure);

struct PodAssignment {
  size_t role = 0;     // index into GangRequest::roles
  size_t replica = 0;  // replica index within the role
  NodeIndex node = 0;
  std::string node_name;
  // The pod's unbound WaitForFirstConsumer claims: the PV chosen for each, or provisioning on
  // node_name (volumes.h). The driver writes them before it binds the pod.
  std::vector<ClaimChoice> volumes;
};

struct Placement {
  std::vector<PodAssignment> assignments;  // gang order (role, replica) when placed, else empty
  PlacementFailure failure = PlacementFailure::kNone;
  std::string message;  // human explanation when not placed

  bool placed() const { return failure == PlacementFailure::kNone; }
};

enum class CapacityMode {
  kFree,         // place on what is free now
  kAllocatable,  // as if every node were empty, preferring nodes with the most free now: the
                 // would-be placement a reservation holds (see queue.h)
};

struct PlacementOptions {
  CapacityMode capacity = CapacityMode::kFree;
};

Placement PlaceGang(const Snapshot& snapshot, const GangRequest& gang,
                    const PlacementOptions& options = {});

// Applies a successful placement to the snapshot so later decisions in the same cycle see it.
void AssumePlacement(Snapshot& snapshot, const GangRequest& gang, const Placement& placement);

}  // namespace lockstep::scheduler
