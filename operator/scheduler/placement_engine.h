#pragma once
// Internal to placement.cc: the state of one PlaceGang call. Pods are grouped into shapes
// (identical PodRequests); per shape and node, how many pods fit is computed once, so the
// topology search below touches each node a few times per level instead of once per pod.

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "operator/scheduler/explain.h"
#include "operator/scheduler/feasibility.h"
#include "operator/scheduler/placement.h"

namespace lockstep::scheduler::internal {

struct Shape {
  const PodRequest* pod = nullptr;
  std::vector<std::pair<ResourceId, int64_t>> demand;  // non-zero amounts, "pods" included
  std::string missing_resource;  // a requested resource no node has (then nothing fits)
  int64_t missing_amount = 0;
  int64_t primary = 0;                             // per pod, of the primary resource
  std::vector<std::pair<size_t, size_t>> members;  // (role, replica), gang order
  std::vector<int64_t> fit;                        // per node: pods that fit on it alone
  std::vector<Infeasibility> reason;               // per node: static reason or kNone
};

class PlacementEngine {
 public:
  PlacementEngine(const Snapshot& snapshot, const GangRequest& gang, PlacementOptions options);
  Placement Run();

 private:
  using Nodes = std::vector<NodeIndex>;
  struct Checkpoint {
    std::vector<int64_t> remaining;
    std::vector<size_t> chosen_sizes;
  };

  // Setup.
  bool BuildShapes();
  void ResolveLevels();
  void ComputeFits(Shape& shape, const std::vector<bool>& excluded);
  int64_t Free(NodeIndex n, ResourceId r) const;
  int64_t PrimaryFree(NodeIndex n, bool current) const;

  // Packing one node: largest shape first, as many as fit; returns pods placed.
  int64_t PackNode(NodeIndex n, std::vector<int64_t>& remaining, bool commit,
                   int64_t* primary_left);
  int64_t TrialCount(const Nodes& nodes, std::vector<int64_t> remaining, int64_t* primary_free);
  int64_t Remaining() const;

  // The search: domains at `level` (fewest, best fit), down to nodes (best fit).
  void FillDomain(const Nodes& nodes, size_t level);
  void FillNodes(const Nodes& nodes);
  std::vector<std::pair<int32_t, Nodes>> Partition(const Nodes& nodes, size_t level,
                                                   bool drop_unlabeled) const;
  bool PlaceInOneDomain(const Nodes& candidates);
  Checkpoint Save() const;
  void Restore(const Checkpoint& checkpoint);

  // Inter-pod constraints (inter_pod_placement.cc): pods one at a time, as kube-scheduler
  // would take them, with the gang's earlier pods counted; in one domain of the hard keys when
  // the gang has any (requiredTopologyKey, podAffinity within the gang).
  bool NeedsOneByOne() const;
  // A pod's claim that cannot be placed anywhere now (volumes.h, ClaimState::kWaiting).
  std::optional<Placement> WaitingClaim() const;
  Placement RunOneByOne(const Nodes& candidates);
  const DomainIndex* IndexFor(const std::string& key);

  // Results.
  Placement BuildAssignments() const;
  Placement Explain(const Nodes& candidates, bool topology_failed);

  const Snapshot& snapshot_;
  const GangRequest& gang_;
  PlacementOptions options_;
  std::optional<ResourceId> primary_;
  std::vector<Shape> shapes_;  // largest primary first
  std::vector<const DomainIndex*> levels_;
  std::deque<DomainIndex> owned_indexes_;  // for keys the snapshot did not precompute
  bool hard_first_level_ = false;
  std::vector<int64_t> remaining_;  // per shape
  std::vector<Nodes> chosen_;       // per shape, one entry per pod placed
  std::vector<int64_t> scratch_;    // a node's free amounts while packing
  std::vector<int64_t> trial_;      // remaining_ while trying one node
};

}  // namespace lockstep::scheduler::internal
