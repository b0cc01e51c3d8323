#pragma once
// Feasibility of one pod on one node, with Kubernetes' semantics: Ready, not cordoned (unless the
// pod tolerates node.kubernetes.io/unschedulable), NoSchedule/NoExecute taints tolerated
// (PreferNoSchedule ignored), nodeSelector, required node affinity, resources fit. What depends
// on other pods (affinity, spread, host ports) is pod_constraints.h's; its reasons are here so
// explanations count nodes by every check.
// Pure functions, thread-safe.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/node_info.h"

namespace lockstep::scheduler {

// Why a node cannot take a pod, in the order the checks run.
enum class Infeasibility {
  kNone = 0,
  kExcluded,  // named in GangRequest::excluded_nodes (failed node under cool-down)
  kNotReady,
  kUnschedulable,  // cordoned
  kTaint,
  kNodeSelector,
  kAffinity,
  kResources,
  // Inter-pod constraints (pod_constraints.h), checked one pod at a time by placement.
  kHostPort,
  kPodAffinity,
  kPodAntiAffinity,
  kTopologySpread,
  // PersistentVolumeClaims (volumes.h), checked one pod at a time by placement.
  kVolumeBinding,
};
inline constexpr int kInfeasibilityCount = 13;

// "NotReady", "cordoned", "taint not tolerated", ... as used in explanations.
std::string_view InfeasibilityName(Infeasibility reason);

inline constexpr std::string_view kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";

// v1.Toleration.ToleratesTaint.
bool ToleratesTaint(const Toleration& toleration, const Taint& taint);
// Every NoSchedule and NoExecute taint is tolerated by some toleration.
bool ToleratesTaints(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);

bool MatchesNodeSelector(const std::map<std::string, std::string>& selector,
                         const std::map<std::string, std::string>& labels);
bool MatchesRequirement(const NodeSelectorRequirement& requirement,
                        const std::map<std::string, std::string>& labels);
// Expressions and fields ANDed; a term with neither matches nothing.
bool MatchesTerm(const NodeSelectorTerm& term, const NodeInfo& node);
// Terms ORed; no terms means no constraint.
bool MatchesRequiredAffinity(const std::vector<NodeSelectorTerm>& terms, const NodeInfo& node);

// Everything but resources and exclusion: the part that depends only on the node's spec.
Infeasibility CheckStatic(const PodRequest& pod, const NodeInfo& node);

// The full check against `node.allocatable - node.requested` (one "pods" slot included when the
// node reports pod capacity).
Infeasibility CheckNode(const PodRequest& pod, const NodeInfo& node);

}  // namespace lockstep::scheduler
