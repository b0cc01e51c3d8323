#pragma once
// Snapshot: the cluster as one scheduling cycle sees it. The static part (nodes sorted by name,
// resource names interned to dense ids, allocatable, topology domain indexes) is built once and
// shared; the requested amounts are a dense per-copy array, so copying a Snapshot to "assume"
// placements costs one vector copy. Thread-compatible; copies are independent.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
};

}  // namespace lockstep::scheduler
