#pragma once
// Snapshot: the cluster as one scheduling cycle sees it. The static part (nodes sorted by name,
// resource names interned to dense ids, allocatable, topology domain indexes) is built once and
// shared; the requested amounts are a dense per-copy array, so copying a Snapshot to "assume"
// placements costs one vector copy. Thread-compatible; copies are independent.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/node_info.h"
#include "operator/scheduler/resources.h"

namespace lockstep::scheduler {

using NodeIndex = uint32_t;
using ResourceId = uint32_t;

inline constexpr std::string_view kBlockKey = "topology.lockstep.dev/block";
inline constexpr std::string_view kRackKey = "topology.lockstep.dev/rack";

// Nodes grouped by the value of one label key. Domain ids follow the sorted label values.
struct DomainIndex {
  static constexpr int32_t kUnlabeled = -1;
  std::string key;
  std::vector<std::string> values;  // id -> label value, sorted
  std::vector<int32_t> of_node;     // node -> id, or kUnlabeled
};

class Snapshot {
 public:
  // Sorts nodes by name (so NodeIndex order is name order) and indexes the given label keys
  // (more can be indexed on demand with BuildDomainIndex). Duplicate node names keep the first.
  static Snapshot Build(std::vector<NodeInfo> nodes,
                        const std::vector<std::string>& topology_keys = {std::string(kBlockKey),
                                                                         std::string(kRackKey)});

  size_t size() const { return model_->nodes.size(); }
  // The node as built; its `requested` field is NOT updated by Assume (see Requested()).
  const NodeInfo& node(NodeIndex n) const { return model_->nodes[n]; }
  std::optional<NodeIndex> Find(std::string_view name) const;

  size_t resource_count() const { return model_->resource_names.size(); }
  std::optional<ResourceId> FindResource(std::string_view name) const;
  const std::string& resource_name(ResourceId r) const { return model_->resource_names[r]; }

  int64_t Allocatable(NodeIndex n, ResourceId r) const { return model_->allocatable[At(n, r)]; }
  int64_t RequestedAmount(NodeIndex n, ResourceId r) const { return requested_[At(n, r)]; }
  // May be negative when a node is over-committed (e.g. allocatable shrank under bound pods).
  int64_t Free(NodeIndex n, ResourceId r) const {
    return Allocatable(n, r) - RequestedAmount(n, r);
  }
  Resources Requested(NodeIndex n) const;

  // The index for `key`: precomputed at Build or null.
  const DomainIndex* Domains(std::string_view key) const;
  DomainIndex BuildDomainIndex(std::string_view key) const;

  // Counts one more pod with `requests` on node `n` (plus one "pods" slot when nodes report it).
  // Resources no node has are ignored: a pod requesting them is never placed.
  void Assume(NodeIndex n, const Resources& requests);
  // The inverse of Assume: the node as if a bound pod with `requests` were gone (e.g. a job's own
  // pods when asking what its gang could get if it were replaced). Never below zero.
  void Release(NodeIndex n, const Resources& requests);

  // Bound pods that inter-pod constraints look at (node_info.h's BoundPod): those the nodes were
  // built with, then those assumed in this copy, each with its node.
  template <typename Fn>  // Fn(NodeIndex, const BoundPod&)
  void ForEachPod(Fn&& fn) const {
    for (NodeIndex n = 0; n < size(); ++n) {
      for (const BoundPod& pod : model_->nodes[n].pods) fn(n, pod);
    }
    for (const auto& [n, pod] : assumed_pods_) fn(n, pod);
  }
  // Records a pod placed in this cycle (AssumePlacement) for the gangs decided after it.
  void AssumePod(NodeIndex n, BoundPod pod) {
    any_anti_affinity_ = any_anti_affinity_ || !pod.anti_affinity.empty();
    assumed_pods_.emplace_back(n, std::move(pod));
  }
  // Whether some pod above has a required anti-affinity term (so a gang without constraints of
  // its own need not look at every pod when none has).
  bool any_anti_affinity() const { return any_anti_affinity_; }
  // Whether pods' labels are recorded (the driver skips them when no pending gang has affinity
  // or spread terms, to keep a cycle over many pods cheap); host ports and anti-affinity terms
  // always are.
  bool pod_labels_indexed() const { return pod_labels_indexed_; }
  void set_pod_labels_indexed(bool indexed) { pod_labels_indexed_ = indexed; }

  // PersistentVolumes chosen for claims of gangs placed earlier in this cycle (AssumePlacement),
  // and those the driver knows are being pre-bound: never chosen again (volumes.h).
  void TakeVolume(std::string name) { taken_volumes_.insert(std::move(name)); }
  bool VolumeTaken(const std::string& name) const { return taken_volumes_.count(name) != 0; }

 private:
  struct Model {
    std::vector<NodeInfo> nodes;
    std::map<std::string, NodeIndex, std::less<>> by_name;
    std::vector<std::string> resource_names;  // sorted; ResourceId = position
    std::optional<ResourceId> pods_resource;
    std::vector<int64_t> allocatable;  // node-major, resource_count() per node
    std::map<std::string, DomainIndex, std::less<>> domains;
  };

  Snapshot() = default;
  size_t At(NodeIndex n, ResourceId r) const { return size_t{n} * resource_count() + r; }

  std::shared_ptr<const Model> model_;
  std::vector<int64_t> requested_;  // node-major, like Model::allocatable
  std::vector<std::pair<NodeIndex, BoundPod>> assumed_pods_;
  bool pod_labels_indexed_ = true;
  bool any_anti_affinity_ = false;
  std::set<std::string> taken_volumes_;
};

}  // namespace lockstep::scheduler
