#pragma once
// Compact typed views of API objects for informer caches: only the fields the controller,
// scheduler and failure detector read, never the JSON document. Decoders take the parsed
// object (metadata.managedFields already dropped) and never throw.
//
// Memory note: a cache holds one of these per object behind a shared_ptr<const T>; big
// annotations such as kubectl's last-applied-configuration are skipped on purpose.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/rfc3339.h"
#include "common/status.h"
#include "operator/kube/flat_map.h"

namespace lockstep::kube {

using StringMap = FlatMap<std::string>;

struct OwnerRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  StringMap labels;
  StringMap annotations;
  std::vector<OwnerRef> owner_refs;
  std::string creation_timestamp;  // RFC 3339, as sent
  std::optional<std::string> deletion_timestamp;
  std::vector<std::string> finalizers;

  // "namespace/name", or "name" for cluster-scoped objects (the cache key).
  std::string Key() const;
  // The owner reference with controller=true, if any.
  const OwnerRef* ControllerRef() const;
};

struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;
  std::string last_heartbeat_time;  // nodes only
};

struct ContainerStatus {
  std::string name;
  bool ready = false;
  int32_t restart_count = 0;
  std::string state;  // "waiting", "running", "terminated" or "" when unknown
  std::string reason;  // e.g. OOMKilled, Error, Completed, CrashLoopBackOff
  std::optional<int32_t> exit_code;
  std::optional<int32_t> signal;
  std::string message;  // the termination message for a terminated container
  std::string finished_at;
};

struct Toleration {
  std::string key;
  std::string op;  // "Equal" (default) or "Exists"
  std::string value;
  std::string effect;  // "" = all effects
  std::optional<int64_t> toleration_seconds;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  std::string time_added;
};

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};

// One requiredDuringSchedulingIgnoredDuringExecution term: all requirements must hold (the
// terms themselves are ORed).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
};

// A metav1.LabelSelector.
struct LabelSelector {
  StringMap match_labels;
  std::vector<NodeSelectorRequirement> match_expressions;  // In, NotIn, Exists, DoesNotExist
};

// One required podAffinity / podAntiAffinity term.
struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;  // null selects no pod
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;
};

struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  std::string when_unsatisfiable;  // DoNotSchedule, ScheduleAnyway
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  std::vector<std::string> match_label_keys;
};

// A container (or init container) port with hostPort > 0.
struct HostPortBinding {
  int32_t host_port = 0;
  std::string protocol;  // "" = TCP
  std::string host_ip;
};

// A volume backed by a PersistentVolumeClaim: a `persistentVolumeClaim` volume's claimName, or
// the claim `<pod>-<volume>` the ephemeral volume controller creates for a generic ephemeral
// volume (`ephemeral.volumeClaimTemplate`).
struct PodVolumeClaim {
  std::string claim;
  bool ephemeral = false;
};

// What places a pod relative to other pods (the gang scheduler's inter-pod checks, issue 41) and
// its claims (the scheduler's volume binding). Preferred terms are scores, not filters, and are
// not kept.
struct PodPlacementTerms {
  std::vector<PodAffinityTerm> required_affinity;
  std::vector<PodAffinityTerm> required_anti_affinity;
  std::vector<TopologySpreadConstraint> topology_spread;
  std::vector<HostPortBinding> host_ports;
  std::vector<PodVolumeClaim> volume_claims;
};

// Resource name -> quantity in milli-units.
using ResourceList = FlatMap<int64_t>;

// The pod condition types DecodePod keeps: the ones the operator reads (readiness; why a pod was
// disrupted). A running pod carries four or five, and kept whole they were a sixth of a cached
// pod's bytes.
inline constexpr const char* kPodConditionsKept[] = {"Ready", "DisruptionTarget"};

struct Pod {
  ObjectMeta meta;
  std::string node_name;
  std::string scheduler_name;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  std::string reason;  // status.reason, e.g. Evicted
  std::string message;
  std::string pod_ip;
  std::vector<Condition> conditions;  // only kPodConditionsKept
  std::vector<ContainerStatus> container_statuses;
  std::vector<ContainerStatus> init_container_statuses;
  // Effective requests: max(sum of containers, largest init container) + overhead, per resource.
  ResourceList requests;
  std::vector<Toleration> tolerations;
  StringMap node_selector;
  std::vector<NodeSelectorTerm> required_node_affinity;
  // Null for the many pods that have none of these, so the cache pays one pointer per pod.
  std::shared_ptr<const PodPlacementTerms> placement_terms;
  int32_t priority = 0;
  std::string priority_class_name;

  const Condition* FindCondition(const std::string& type) const;
  bool IsTerminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct Node {
  ObjectMeta meta;
  std::vector<Taint> taints;
  bool unschedulable = false;
  std::optional<Condition> ready;  // the Ready condition, with lastHeartbeatTime
  ResourceList allocatable;
  ResourceList capacity;

  bool IsReady() const { return ready && ready->status == "True"; }
};

struct Lease {
  ObjectMeta meta;
  std::string holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::string acquire_time;
  std::string renew_time;  // RFC 3339 with microseconds
  int32_t lease_transitions = 0;
};

// Services, Secrets and other kinds where only identity and ownership matter.
struct MetaObject {
  ObjectMeta meta;
};

// Object meta plus raw spec/status JSON (e.g. TrainingJobs, decoded by the api/ codec).
struct GenericObject {
  ObjectMeta meta;
  std::string api_version;
  std::string kind;
  nlohmann::json spec;
  nlohmann::json status;
};

StatusOr<ObjectMeta> DecodeObjectMeta(const nlohmann::json& object);
StatusOr<Pod> DecodePod(const nlohmann::json& object);
StatusOr<Node> DecodeNode(const nlohmann::json& object);
StatusOr<Lease> DecodeLease(const nlohmann::json& object);
StatusOr<MetaObject> DecodeMetaObject(const nlohmann::json& object);
StatusOr<GenericObject> DecodeGenericObject(const nlohmann::json& object);

// RFC 3339 times (metav1.Time, metav1.MicroTime): common/rfc3339.h.
using ::lockstep::FormatMicroTime;
using ::lockstep::ParseTime;

}  // namespace lockstep::kube
