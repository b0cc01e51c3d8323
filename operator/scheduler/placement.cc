#include "operator/scheduler/placement.h"

#include <algorithm>

#include "common/enum_names.h"
#include "operator/scheduler/placement_engine.h"

namespace lockstep::scheduler {

namespace {

constexpr NameTable<PlacementFailure, 11> kFailureReasons = {
    {{PlacementFailure::kNone, "Scheduled"},
     {PlacementFailure::kInvalidRequest, "InvalidRequest"},
     {PlacementFailure::kNoFeasibleNodes, "NoFeasibleNodes"},
     {PlacementFailure::kInsufficientResources, "InsufficientResources"},
     {PlacementFailure::kTopology, "TopologyConstraint"},
     {PlacementFailure::kFragmented, "Fragmented"},
     {PlacementFailure::kHostPort, "HostPortInUse"},
     {PlacementFailure::kPodAffinity, "PodAffinity"},
     {PlacementFailure::kPodAntiAffinity, "PodAntiAffinity"},
     {PlacementFailure::kTopologySpread, "TopologySpread"},
     {PlacementFailure::kVolumeBinding, "VolumeBinding"}}};

}  // namespace

std::string_view PlacementFailureReason(PlacementFailure failure) {
  return NameOf(kFailureReasons, failure, "Unknown");
}

Placement PlaceGang(const Snapshot& snapshot, const GangRequest& gang,
                    const PlacementOptions& options) {
  return internal::PlacementEngine(snapshot, gang, options).Run();
}

void AssumePlacement(Snapshot& snapshot, const GangRequest& gang, const Placement& placement) {
  for (const PodAssignment& a : placement.assignments) {
    const PodRequest& pod = gang.roles[a.role].pods[a.replica];
    snapshot.Assume(a.node, pod.requests);
    for (const ClaimChoice& choice : a.volumes) {
      if (!choice.volume.empty()) snapshot.TakeVolume(choice.volume);
    }
    const bool labels = snapshot.pod_labels_indexed() && !pod.labels.empty();
    if (!labels && pod.constraints.host_ports.empty() && pod.constraints.anti_affinity.empty()) {
      continue;
    }
    snapshot.AssumePod(a.node, BoundPod{pod.namespace_, labels ? pod.labels : Labels{},
                                        pod.constraints.host_ports, pod.constraints.anti_affinity});
  }
}

namespace internal {

// Gathers what the explanation needs; only runs when the gang does not fit.
Placement PlacementEngine::Explain(const Nodes& candidates, bool topology_failed) {
  FailureFacts f;
  for (const Shape& shape : shapes_) {
    if (!shape.missing_resource.empty()) {
      f.missing_resource = shape.missing_resource;
      f.missing_per_pod = shape.missing_amount;
      return ExplainFailure(f);
    }
  }
  const size_t r_count = snapshot_.resource_count();
  std::vector<int64_t> free(r_count, 0);
  Nodes schedulable;
  for (NodeIndex n = 0; n < snapshot_.size(); ++n) {
    const bool usable = std::any_of(shapes_.begin(), shapes_.end(), [&](const Shape& s) {
      return s.reason[n] == Infeasibility::kNone;
    });
    if (!usable) {
      ++f.excluded_by_reason[static_cast<size_t>(shapes_[0].reason[n])];
      continue;
    }
    schedulable.push_back(n);
    for (ResourceId r = 0; r < r_count; ++r) free[r] += std::max<int64_t>(0, Free(n, r));
  }
  f.schedulable_nodes = static_cast<int64_t>(schedulable.size());
  std::vector<int64_t> needed(r_count, 0);
  std::vector<int64_t> all_pods;
  for (const Shape& shape : shapes_) {
    const auto count = static_cast<int64_t>(shape.members.size());
    all_pods.push_back(count);
    f.pods_needed += count;
    for (const auto& [r, amount] : shape.demand) needed[r] += count * amount;
  }
  std::vector<ResourceId> order;
  if (primary_) order.push_back(*primary_);
  for (ResourceId r = 0; r < r_count; ++r) {
    if (r != primary_) order.push_back(r);
  }
  for (ResourceId r : order) {
    if (needed[r] > free[r]) {
      f.short_resource = snapshot_.resource_name(r);
      f.short_needed = needed[r];
      f.short_free = free[r];
      break;
    }
  }
  f.pods_fit = TrialCount(candidates, all_pods, nullptr);
  f.primary_resource = primary_ ? snapshot_.resource_name(*primary_) : std::string(kCpu);
  if (primary_) {
    f.primary_needed = needed[*primary_];
    f.primary_free = free[*primary_];
  }
  if (shapes_.size() == 1) f.primary_per_pod = shapes_[0].primary;
  if (topology_failed) {
    f.required_key = gang_.required_topology_key;
    for (const auto& [domain, nodes] : Partition(schedulable, 0, /*drop_unlabeled=*/true)) {
      int64_t domain_free = 0;
      for (NodeIndex n : nodes) domain_free += PrimaryFree(n, /*current=*/false);
      f.largest_domain_free = std::max(f.largest_domain_free, domain_free);
      f.largest_domain_pods = std::max(f.largest_domain_pods, TrialCount(nodes, all_pods, nullptr));
    }
  }
  return ExplainFailure(f);
}

}  // namespace internal
}  // namespace lockstep::scheduler
