#include "operator/kube/objects.h"

#include <algorithm>
#include <cctype>

#include "operator/kube/json_lookup.h"
#include "operator/kube/milli_quantity.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

// Annotations never worth caching: a full copy of the object written by kubectl apply.
constexpr const char* kSkippedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

template <typename Int>
std::optional<Int> OptInt(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (!v.is_number_integer()) return std::nullopt;
  return static_cast<Int>(v.get<int64_t>());
}

bool Bool(const json& j, const char* key) {
  const json& v = Field(j, key);
  return v.is_boolean() && v.get<bool>();
}

StringMap Strings(const json& j, const char* skip = nullptr) {
  StringMap out;
  if (!j.is_object()) return out;
  out.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (skip != nullptr && it.key() == skip) continue;
    if (it->is_string()) out.emplace(it.key(), it->get<std::string>());
  }
  out.shrink_to_fit();
  return out;
}

template <typename T, typename Fn>
std::vector<T> Each(const json& arr, Fn&& decode) {
  std::vector<T> out;
  if (!arr.is_array()) return out;
  out.reserve(arr.size());
  for (const auto& item : arr) out.push_back(decode(item));
  return out;
}

std::vector<std::string> StringList(const json& arr) {
  return Each<std::string>(arr, [](const json& v) {
    return v.is_string() ? v.get<std::string>() : std::string();
  });
}

Condition DecodeCondition(const json& c) {
  return Condition{Str(c, "type"),    Str(c, "status"),
                   Str(c, "reason"),  Str(c, "message"),
                   Str(c, "lastTransitionTime"), Str(c, "lastHeartbeatTime")};
}

ContainerStatus DecodeContainerStatus(const json& c) {
  ContainerStatus s;
  s.name = Str(c, "name");
  s.ready = Bool(c, "ready");
  s.restart_count = OptInt<int32_t>(c, "restartCount").value_or(0);
  const json& state = Field(c, "state");
  if (const json& t = Field(state, "terminated"); t.is_object()) {
    s.state = "terminated";
    s.reason = Str(t, "reason");
    s.exit_code = OptInt<int32_t>(t, "exitCode");
    s.signal = OptInt<int32_t>(t, "signal");
    s.message = Str(t, "message");
    s.finished_at = Str(t, "finishedAt");
  } else if (const json& w = Field(state, "waiting"); w.is_object()) {
    s.state = "waiting";
    s.reason = Str(w, "reason");
    s.message = Str(w, "message");
  } else if (Field(state, "running").is_object()) {
    s.state = "running";
  }
  return s;
}

Toleration DecodeToleration(const json& t) {
  Toleration out{Str(t, "key"), Str(t, "operator"), Str(t, "value"), Str(t, "effect"),
                 OptInt<int64_t>(t, "tolerationSeconds")};
  if (out.op.empty()) out.op = "Equal";
  return out;
}

std::vector<Condition> KeptPodConditions(const json& arr) {
  std::vector<Condition> out;
  if (!arr.is_array()) return out;
  for (const auto& c : arr) {
    const std::string type = Str(c, "type");
    if (std::ranges::find(kPodConditionsKept, type) != std::end(kPodConditionsKept)) {
      out.push_back(DecodeCondition(c));
    }
  }
  return out;
}

NodeSelectorRequirement DecodeRequirement(const json& r) {
  return NodeSelectorRequirement{Str(r, "key"), Str(r, "operator"),
                                 StringList(Field(r, "values"))};
}

std::optional<LabelSelector> DecodeLabelSelector(const json& j) {
  if (!j.is_object()) return std::nullopt;
  return LabelSelector{
      Strings(Field(j, "matchLabels")),
      Each<NodeSelectorRequirement>(Field(j, "matchExpressions"), DecodeRequirement)};
}

PodAffinityTerm DecodePodAffinityTerm(const json& t) {
  return PodAffinityTerm{DecodeLabelSelector(Field(t, "labelSelector")),
                         StringList(Field(t, "namespaces")),
                         DecodeLabelSelector(Field(t, "namespaceSelector")),
                         Str(t, "topologyKey"),
                         StringList(Field(t, "matchLabelKeys")),
                         StringList(Field(t, "mismatchLabelKeys"))};
}

void AddHostPorts(const json& containers, std::vector<HostPortBinding>* out) {
  if (!containers.is_array()) return;
  for (const json& c : containers) {
    const json& ports = Field(c, "ports");
    if (!ports.is_array()) continue;
    for (const json& p : ports) {
      const int32_t host_port = OptInt<int32_t>(p, "hostPort").value_or(0);
      if (host_port > 0) out->push_back({host_port, Str(p, "protocol"), Str(p, "hostIP")});
    }
  }
}

void AddVolumeClaims(const json& volumes, const std::string& pod_name,
                     std::vector<PodVolumeClaim>* out) {
  if (!volumes.is_array()) return;
  for (const json& v : volumes) {
    const std::string claim = Str(Field(v, "persistentVolumeClaim"), "claimName");
    if (!claim.empty()) {
      out->push_back({claim, false});
    } else if (Field(Field(v, "ephemeral"), "volumeClaimTemplate").is_object()) {
      out->push_back({pod_name + "-" + Str(v, "name"), true});
    }
  }
}

// Null when the pod has no required inter-pod term, spread constraint, host port or claim.
std::shared_ptr<const PodPlacementTerms> DecodePlacementTerms(const json& spec,
                                                              const std::string& pod_name) {
  PodPlacementTerms terms;
  const json& affinity = Field(spec, "affinity");
  terms.required_affinity = Each<PodAffinityTerm>(
      Field(Field(affinity, "podAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
      DecodePodAffinityTerm);
  terms.required_anti_affinity = Each<PodAffinityTerm>(
      Field(Field(affinity, "podAntiAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
      DecodePodAffinityTerm);
  terms.topology_spread =
      Each<TopologySpreadConstraint>(Field(spec, "topologySpreadConstraints"), [](const json& c) {
        return TopologySpreadConstraint{OptInt<int32_t>(c, "maxSkew").value_or(1),
                                        Str(c, "topologyKey"),
                                        Str(c, "whenUnsatisfiable"),
                                        DecodeLabelSelector(Field(c, "labelSelector")),
                                        OptInt<int32_t>(c, "minDomains"),
                                        StringList(Field(c, "matchLabelKeys"))};
      });
  AddHostPorts(Field(spec, "initContainers"), &terms.host_ports);
  AddHostPorts(Field(spec, "containers"), &terms.host_ports);
  AddVolumeClaims(Field(spec, "volumes"), pod_name, &terms.volume_claims);
  if (terms.required_affinity.empty() && terms.required_anti_affinity.empty() &&
      terms.topology_spread.empty() && terms.host_ports.empty() && terms.volume_claims.empty()) {
    return nullptr;
  }
  return std::make_shared<const PodPlacementTerms>(std::move(terms));
}

Status AddResources(const json& list, ResourceList* out) {
  if (!list.is_object()) return Status::Ok();
  for (auto it = list.begin(); it != list.end(); ++it) {
    std::string text;
    if (it->is_string()) {
      text = it->get<std::string>();
    } else if (it->is_number()) {
      text = it->dump();
    } else {
      continue;
    }
    LS_ASSIGN_OR_RETURN(int64_t milli, ParseQuantityMilli(text));
    int64_t& total = (*out)[it.key()];
    total = SaturatingAdd(total, milli);  // two saturated requests must not wrap negative
  }
  return Status::Ok();
}

// Effective pod requests as the scheduler counts them.
Status PodRequests(const json& spec, ResourceList* out) {
  ResourceList sum;
  for (const auto& c : Field(spec, "containers")) {
    LS_RETURN_IF_ERROR(AddResources(Field(Field(c, "resources"), "requests"), &sum));
  }
  for (const auto& c : Field(spec, "initContainers")) {
    ResourceList init;
    LS_RETURN_IF_ERROR(AddResources(Field(Field(c, "resources"), "requests"), &init));
    for (const auto& [name, v] : init) sum[name] = std::max(sum[name], v);
  }
  LS_RETURN_IF_ERROR(AddResources(Field(spec, "overhead"), &sum));
  sum.shrink_to_fit();
  *out = std::move(sum);
  return Status::Ok();
}

template <typename T, typename Fn>
StatusOr<T> Guard(Fn&& fn) {
  try {
    return fn();
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("decode: ") + e.what());
  }
}

}  // namespace

std::string ObjectMeta::Key() const {
  return namespace_.empty() ? name : namespace_ + "/" + name;
}

const OwnerRef* ObjectMeta::ControllerRef() const {
  for (const auto& ref : owner_refs) {
    if (ref.controller) return &ref;
  }
  return nullptr;
}

const Condition* Pod::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

StatusOr<ObjectMeta> DecodeObjectMeta(const json& object) {
  return Guard<ObjectMeta>([&]() -> StatusOr<ObjectMeta> {
    const json& m = Field(object, "metadata");
    if (!m.is_object()) return InvalidArgumentError("object has no metadata");
    ObjectMeta meta;
    meta.name = Str(m, "name");
    if (meta.name.empty()) return InvalidArgumentError("object has no metadata.name");
    meta.namespace_ = Str(m, "namespace");
    meta.uid = Str(m, "uid");
    meta.resource_version = Str(m, "resourceVersion");
    meta.generation = OptInt<int64_t>(m, "generation").value_or(0);
    meta.labels = Strings(Field(m, "labels"));
    meta.annotations = Strings(Field(m, "annotations"), kSkippedAnnotation);
    meta.owner_refs = Each<OwnerRef>(Field(m, "ownerReferences"), [](const json& r) {
      return OwnerRef{Str(r, "apiVersion"), Str(r, "kind"), Str(r, "name"), Str(r, "uid"),
                      Bool(r, "controller")};
    });
    meta.creation_timestamp = Str(m, "creationTimestamp");
    if (const std::string d = Str(m, "deletionTimestamp"); !d.empty()) {
      meta.deletion_timestamp = d;
    }
    meta.finalizers = StringList(Field(m, "finalizers"));
    return meta;
  });
}

StatusOr<Pod> DecodePod(const json& object) {
  return Guard<Pod>([&]() -> StatusOr<Pod> {
    Pod pod;
    LS_ASSIGN_OR_RETURN(pod.meta, DecodeObjectMeta(object));
    const json& spec = Field(object, "spec");
    const json& status = Field(object, "status");
    pod.node_name = Str(spec, "nodeName");
    pod.scheduler_name = Str(spec, "schedulerName");
    pod.priority = OptInt<int32_t>(spec, "priority").value_or(0);
    pod.priority_class_name = Str(spec, "priorityClassName");
    pod.node_selector = Strings(Field(spec, "nodeSelector"));
    pod.tolerations = Each<Toleration>(Field(spec, "tolerations"), DecodeToleration);
    const json& required = Field(Field(Field(spec, "affinity"), "nodeAffinity"),
                                 "requiredDuringSchedulingIgnoredDuringExecution");
    pod.required_node_affinity =
        Each<NodeSelectorTerm>(Field(required, "nodeSelectorTerms"), [](const json& t) {
          return NodeSelectorTerm{
              Each<NodeSelectorRequirement>(Field(t, "matchExpressions"), DecodeRequirement),
              Each<NodeSelectorRequirement>(Field(t, "matchFields"), DecodeRequirement)};
        });
    pod.placement_terms = DecodePlacementTerms(spec, pod.meta.name);
    LS_RETURN_IF_ERROR(PodRequests(spec, &pod.requests));
    pod.phase = Str(status, "phase");
    pod.reason = Str(status, "reason");
    pod.message = Str(status, "message");
    pod.pod_ip = Str(status, "podIP");
    pod.conditions = KeptPodConditions(Field(status, "conditions"));
    pod.container_statuses =
        Each<ContainerStatus>(Field(status, "containerStatuses"), DecodeContainerStatus);
    pod.init_container_statuses =
        Each<ContainerStatus>(Field(status, "initContainerStatuses"), DecodeContainerStatus);
    return pod;
  });
}

StatusOr<Node> DecodeNode(const json& object) {
  return Guard<Node>([&]() -> StatusOr<Node> {
    Node node;
    LS_ASSIGN_OR_RETURN(node.meta, DecodeObjectMeta(object));
    const json& spec = Field(object, "spec");
    const json& status = Field(object, "status");
    node.unschedulable = Bool(spec, "unschedulable");
    node.taints = Each<Taint>(Field(spec, "taints"), [](const json& t) {
      return Taint{Str(t, "key"), Str(t, "value"), Str(t, "effect"), Str(t, "timeAdded")};
    });
    for (const auto& c : Field(status, "conditions")) {
      if (Str(c, "type") == "Ready") node.ready = DecodeCondition(c);
    }
    LS_RETURN_IF_ERROR(AddResources(Field(status, "allocatable"), &node.allocatable));
    LS_RETURN_IF_ERROR(AddResources(Field(status, "capacity"), &node.capacity));
    node.allocatable.shrink_to_fit();
    node.capacity.shrink_to_fit();
    return node;
  });
}

StatusOr<Lease> DecodeLease(const json& object) {
  return Guard<Lease>([&]() -> StatusOr<Lease> {
    Lease lease;
    LS_ASSIGN_OR_RETURN(lease.meta, DecodeObjectMeta(object));
    const json& spec = Field(object, "spec");
    lease.holder_identity = Str(spec, "holderIdentity");
    lease.lease_duration_seconds = OptInt<int32_t>(spec, "leaseDurationSeconds");
    lease.acquire_time = Str(spec, "acquireTime");
    lease.renew_time = Str(spec, "renewTime");
    lease.lease_transitions = OptInt<int32_t>(spec, "leaseTransitions").value_or(0);
    return lease;
  });
}

StatusOr<MetaObject> DecodeMetaObject(const json& object) {
  LS_ASSIGN_OR_RETURN(ObjectMeta meta, DecodeObjectMeta(object));
  return MetaObject{std::move(meta)};
}

StatusOr<GenericObject> DecodeGenericObject(const json& object) {
  return Guard<GenericObject>([&]() -> StatusOr<GenericObject> {
    GenericObject out;
    LS_ASSIGN_OR_RETURN(out.meta, DecodeObjectMeta(object));
    out.api_version = Str(object, "apiVersion");
    out.kind = Str(object, "kind");
    out.spec = Field(object, "spec");
    out.status = Field(object, "status");
    return out;
  });
}

}  // namespace lockstep::kube
