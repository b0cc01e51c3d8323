#pragma once
// Adapters from the Kubernetes client's cache types (operator/kube/objects.h) to the pure core's
// model (node_info.h, gang_request.h). Quantities arrive in milli-units; the core counts cpu in
// millicores and everything else in whole units, so non-cpu amounts are divided by 1000:
// requests round up (never under-count what a pod uses), allocatable rounds down.

#include <optional>

#include "operator/kube/objects.h"
#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/node_info.h"
#include "operator/scheduler/resources.h"

namespace lockstep::scheduler {

Resources RequestsFromMilli(const kube::ResourceList& milli);

// Node selector requirements and label selectors; an unknown operator matches nothing.
std::vector<NodeSelectorRequirement> ConvertRequirements(
    const std::vector<kube::NodeSelectorRequirement>& in);
LabelSelector ConvertSelector(const kube::LabelSelector& in);
Resources AllocatableFromMilli(const kube::ResourceList& milli);

// Labels, taints, cordon, Ready and allocatable; `requested` is left empty (see AddBoundPod).
NodeInfo ToNodeInfo(const kube::Node& node);

// Requests, tolerations, nodeSelector, required node affinity, and the inter-pod constraints
// (required pod affinity and anti-affinity, DoNotSchedule spread, host ports) with the pod's
// namespace and labels. Unknown operators or effects
// make the pod impossible to satisfy rather than silently looser.
PodRequest ToPodRequest(const kube::Pod& pod);

// What a bound pod means to other pods' inter-pod constraints: its host ports and required
// anti-affinity terms, and its labels when `with_labels` (some pending gang has affinity or
// spread terms). Nullopt when none of these is there, as for most pods.
std::optional<BoundPod> ToBoundPod(const kube::Pod& pod, bool with_labels);

// Whether the pod has required pod affinity or anti-affinity or spread terms, which read other
// pods' labels (host ports do not).
inline bool NeedsPodLabels(const kube::Pod& pod) {
  return pod.placement_terms != nullptr &&
         (!pod.placement_terms->required_affinity.empty() ||
          !pod.placement_terms->required_anti_affinity.empty() ||
          !pod.placement_terms->topology_spread.empty());
}

// A pod that holds node resources: bound (spec.nodeName set) and not Succeeded/Failed.
inline bool HoldsResources(const kube::Pod& pod) {
  return !pod.node_name.empty() && !pod.IsTerminal();
}

}  // namespace lockstep::scheduler
