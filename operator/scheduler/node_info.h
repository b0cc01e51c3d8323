#pragma once
// What the scheduler knows about one node, independent of the Kubernetes client: the driver
// fills it from the Node object and from every bound, non-terminal pod on the node (ours and
// other schedulers'), so free capacity = allocatable - requested is right.

#include <map>
#include <string>
#include <vector>

#include "operator/scheduler/pod_terms.h"
#include "operator/scheduler/resources.h"

namespace lockstep::scheduler {

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  friend bool operator==(const Taint&, const Taint&) = default;
};

// A bound pod as other pods' inter-pod constraints see it (issue 41). The driver records one
// only when it can matter: labels when some pending gang has affinity or spread terms, host
// ports and anti-affinity terms (which constrain whoever comes next) always.
struct BoundPod {
  std::string namespace_;
  std::map<std::string, std::string> labels;
  std::vector<HostPort> host_ports;
  std::vector<PodAffinityTerm> anti_affinity;
};

struct NodeInfo {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  bool ready = true;           // the Ready condition is True
  Resources allocatable;       // status.allocatable, including "pods" when the node reports it
  Resources requested;         // sum of requests of bound, non-terminal pods; see AddBoundPod
  std::vector<BoundPod> pods;  // bound pods that inter-pod constraints look at (see BoundPod)
};

// Counts one bound pod against the node: its requests plus one "pods" slot.
inline void AddBoundPod(NodeInfo& node, const Resources& pod_requests) {
  node.requested += pod_requests;
  node.requested.Add(kPods, 1);
}

}  // namespace lockstep::scheduler
