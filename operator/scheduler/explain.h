#pragma once
// Explanations for a gang that cannot be placed: the facts placement gathered, turned into one
// reason and one message that says what is missing, e.g.
//   needs 16 nvidia.com/gpu within one topology.lockstep.dev/block; largest free block has 12
//   needs 64 nvidia.com/gpu; 40 free on schedulable nodes (12 nodes excluded: 4 NotReady, ...)
// Pure, thread-safe.

#include <array>
#include <cstdint>
#include <string>

#include "operator/scheduler/feasibility.h"
#include "operator/scheduler/placement.h"

namespace lockstep::scheduler {

struct FailureFacts {
  // Nodes no pod of the gang may use, counted by the first failing check for its largest pod.
  std::array<int64_t, kInfeasibilityCount> excluded_by_reason{};
  int64_t schedulable_nodes = 0;  // nodes at least one pod of the gang may use (ignoring resources)

  // A resource a pod requests that no node has at all.
  std::string missing_resource;
  int64_t missing_per_pod = 0;

  // The first resource (primary first) whose total free on schedulable nodes is short.
  std::string short_resource;
  int64_t short_needed = 0;
  int64_t short_free = 0;

  // Pod-sized pieces: how many of the gang's pods fit on all schedulable nodes together.
  int64_t pods_needed = 0;
  int64_t pods_fit = 0;
  std::string primary_resource;  // "nvidia.com/gpu" when the gang asks for GPUs, else "cpu"
  int64_t primary_needed = 0;    // total over the gang
  int64_t primary_free = 0;      // total free on schedulable nodes
  int64_t primary_per_pod = 0;   // when every pod asks the same amount, else 0

  // requiredTopologyKey: set when no single domain of the key can hold the gang.
  std::string required_key;
  int64_t largest_domain_free = 0;  // of the primary resource
  int64_t largest_domain_pods = 0;  // most of the gang's pods one domain can hold
};

Placement ExplainFailure(const FailureFacts& facts);

// "12 nodes excluded: 4 NotReady, 2 cordoned, 6 taint not tolerated", or "" when none.
std::string DescribeExcluded(const std::array<int64_t, kInfeasibilityCount>& excluded_by_reason);

// The last path segment of a label key: "topology.lockstep.dev/block" -> "block".
std::string DomainNoun(const std::string& key);

}  // namespace lockstep::scheduler
