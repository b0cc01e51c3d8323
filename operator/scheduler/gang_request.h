#pragma once
// What a gang (one TrainingJob, all roles) asks of the cluster, independent of the Kubernetes
// client. The driver builds it from the job and its pod templates.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/scheduler/node_info.h"
#include "operator/scheduler/pod_terms.h"
#include "operator/scheduler/resources.h"
#include "operator/scheduler/volume_terms.h"

namespace lockstep::scheduler {

enum class TolerationOperator { kEqual, kExists };

struct Toleration {
  std::string key;  // empty with kExists tolerates every taint
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // empty matches every effect
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

// NodeSelectorTerm (volume_terms.h): expressions are ANDed. `match_fields` supports the one
// field Kubernetes allows, "metadata.name". A term with neither matches no node, as in Kubernetes.

// A topologySpreadConstraint with whenUnsatisfiable: DoNotSchedule (ScheduleAnyway ones are
// preferences and are not carried). The selector counts pods in the pod's own namespace.
struct SpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  std::optional<LabelSelector> selector;  // null counts no pod
  int32_t min_domains = 1;
  friend bool operator==(const SpreadConstraint&, const SpreadConstraint&) = default;
};

// What places a pod relative to other pods (issue 41). Preferred terms are not carried: they are
// scores, never filters, so leaving them out cannot make a placement wrong.
struct PodConstraints {
  std::vector<PodAffinityTerm> affinity;       // required podAffinity terms, ANDed
  std::vector<PodAffinityTerm> anti_affinity;  // required podAntiAffinity terms, ANDed
  std::vector<SpreadConstraint> spread;        // DoNotSchedule constraints, ANDed
  std::vector<HostPort> host_ports;
  bool empty() const {
    return affinity.empty() && anti_affinity.empty() && spread.empty() && host_ports.empty();
  }
  friend bool operator==(const PodConstraints&, const PodConstraints&) = default;
};

struct PodRequest {
  Resources requests;  // effective requests (max of init containers and sum of containers)
  std::vector<Toleration> tolerations;
  std::map<std::string, std::string> node_selector;
  // requiredDuringSchedulingIgnoredDuringExecution: terms ORed; empty = no constraint.
  std::vector<NodeSelectorTerm> required_affinity;
  // Who the pod is to other pods' selectors, and its own inter-pod constraints. The labels
  // differ per replica (lockstep.dev/replica-index), so placement groups pods into shapes
  // without them (SameShape).
  std::string namespace_;
  Labels labels;
  PodConstraints constraints;
  // Its PersistentVolumeClaims as the driver resolved them (volumes.h); like labels, they differ
  // per replica (ephemeral claims are named after the pod), so shapes leave them out.
  std::vector<ClaimNeed> volumes;
  friend bool operator==(const PodRequest&, const PodRequest&) = default;
};

// PriorityClass.preemptionPolicy: whether a gang that does not fit may evict lower-priority gangs.
enum class PreemptionPolicy { kPreemptLowerPriority, kNever };

struct Role {
  std::string name;
  std::vector<PodRequest> pods;  // in replica-index order
};

struct GangRequest {
  std::string job_key;  // "namespace/name"
  int32_t priority = 0;
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  std::chrono::system_clock::time_point creation_time;
  std::vector<Role> roles;
  std::vector<std::string> topology_keys;   // coarse -> fine, soft: pack into few domains
  std::string required_topology_key;        // hard: the whole gang in one domain; empty = none
  std::vector<std::string> excluded_nodes;  // e.g. failed nodes under cool-down

  size_t PodCount() const {
    size_t n = 0;
    for (const Role& r : roles) n += r.pods.size();
    return n;
  }
};

}  // namespace lockstep::scheduler
