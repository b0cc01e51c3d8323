#include "tests/e2e/agent/node_registration.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/log.h"
#include "operator/kube/objects.h"
#include "tests/e2e/agent/pod_status.h"

namespace lockstep::e2e {

using nlohmann::json;

namespace {

constexpr char kLeaseNamespace[] = "kube-node-lease";

json Conditions(const std::string& since, const std::string& now) {
  auto cond = [&](const char* type, const char* status, const char* reason, const char* msg) {
    return json{{"type", type},   {"status", status},         {"reason", reason},
                {"message", msg}, {"lastHeartbeatTime", now}, {"lastTransitionTime", since}};
  };
  return json::array({
      cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "test node agent"),
      cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "test node agent"),
      cond("PIDPressure", "False", "KubeletHasSufficientPID", "test node agent"),
      cond("Ready", "True", "KubeletReady", "lockstep test node agent is posting ready status"),
  });
}

}  // namespace

NodeResources HostResources() {
  NodeResources r;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  r.cpus = cpus > 0 ? cpus : 1;
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t value = 0;
  std::string unit;
  while (in >> key >> value >> unit) {
    if (key == "MemTotal:") {
      r.memory_kib = value;
      break;
    }
  }
  return r;
}

json BuildNode(const AgentOptions& options, const std::string& name, const std::string& host_ip,
               const NodeResources& resources, int kubelet_port) {
  const std::string now = NowRfc3339();
  const json capacity = {{"cpu", std::to_string(resources.cpus)},
                         {"memory", std::to_string(resources.memory_kib) + "Ki"},
                         {"pods", "110"},
                         {"ephemeral-storage", "100Gi"},
                         {"nvidia.com/gpu", std::to_string(options.gpus)}};
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata",
               {{"name", name},
                {"labels",
                 {{"kubernetes.io/hostname", name},
                  {"kubernetes.io/os", "linux"},
                  {"kubernetes.io/arch", "amd64"},
                  {"topology.lockstep.dev/block", options.block},
                  {"topology.lockstep.dev/rack", options.rack},
                  {"type", "lockstep-test-node-agent"},
                  {kAgentNodeLabel, "true"}}},
                {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}}}},
              {"spec", json::object()},
              {"status",
               {{"capacity", capacity},
                {"allocatable", capacity},
                {"conditions", Conditions(now, now)},
                {"addresses", json::array({{{"type", "InternalIP"}, {"address", host_ip}},
                                           {{"type", "Hostname"}, {"address", name}}})},
                {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", kubelet_port}}}}},
                {"nodeInfo",
                 {{"machineID", name},
                  {"systemUUID", name},
                  {"bootID", name},
                  {"kernelVersion", ""},
                  {"osImage", "lockstep test node agent"},
                  {"containerRuntimeVersion", "lockstep-test-node-agent://0"},
                  {"kubeletVersion", "v0.0.0-lockstep-test-node-agent"},
                  {"kubeProxyVersion", ""},
                  {"operatingSystem", "linux"},
                  {"architecture", "amd64"}}}}}};
}

NodeRegistration::NodeRegistration(kube::RestClient& client, const AgentOptions& options,
                                   std::string name, std::string host_ip, int kubelet_port)
    : client_(client),
      options_(options),
      name_(std::move(name)),
      host_ip_(std::move(host_ip)),
      kubelet_port_(kubelet_port) {}

Status NodeRegistration::Register() {
  const json node = BuildNode(options_, name_, host_ip_, HostResources(), kubelet_port_);
  registered_at_ = node["status"]["conditions"][0]["lastTransitionTime"].get<std::string>();
  std::string uid;
  StatusOr<json> existing = client_.Get(kube::resources::Nodes(), "", name_);
  if (existing.ok()) {
    const json labels = (*existing)["metadata"].value("labels", json::object());
    if (!labels.contains(kAgentNodeLabel)) {
      return AlreadyExistsError("node " + name_ + " exists and is not a test-agent node");
    }
    // Left by a crashed agent: take it over like a restarted kubelet (deleting it would let
    // the pod garbage collector remove the pods bound to it).
    log::Warning("taking over a stale agent node", {{"node", name_}});
    LS_RETURN_IF_ERROR(client_
                           .MergePatch(kube::resources::Nodes(), "", name_,
                                       {{"metadata", {{"labels", node["metadata"]["labels"]}}}})
                           .status());
    uid = (*existing)["metadata"].value("uid", "");
  } else if (IsNotFound(existing.status())) {
    LS_ASSIGN_OR_RETURN(json created, client_.Create(kube::resources::Nodes(), "", node));
    uid = created["metadata"].value("uid", "");
  } else {
    return existing.status();
  }
  // Status is written explicitly: a create may drop it, and a taken-over node has an old one.
  LS_RETURN_IF_ERROR(
      client_
          .MergePatch(kube::resources::Nodes(), "", name_, {{"status", node["status"]}}, "status")
          .status());
  LS_RETURN_IF_ERROR(EnsureLease(uid));
  renewed_at_ = status_posted_at_ = std::chrono::steady_clock::now();
  log::Info("node registered", {{"node", name_}, {"gpus", std::to_string(options_.gpus)}});
  return Status::Ok();
}

Status NodeRegistration::EnsureLease(const std::string& node_uid) {
  const std::string now = kube::FormatMicroTime(std::chrono::system_clock::now());
  const json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", name_},
        {"namespace", kLeaseNamespace},
        {"ownerReferences",
         json::array(
             {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", name_}, {"uid", node_uid}}})}}},
      {"spec",
       {{"holderIdentity", name_},
        {"leaseDurationSeconds", options_.lease_duration_s},
        {"renewTime", now}}}};
  StatusOr<json> created = client_.Create(kube::resources::Leases(), kLeaseNamespace, lease);
  if (created.ok()) return Status::Ok();
  if (!IsAlreadyExists(created.status())) return created.status();
  // A lease of a previous incarnation: take it over (new owner, fresh renewTime).
  return client_
      .MergePatch(kube::resources::Leases(), kLeaseNamespace, name_,
                  {{"metadata", {{"ownerReferences", lease["metadata"]["ownerReferences"]}}},
                   {"spec", lease["spec"]}})
      .status();
}

Status NodeRegistration::RenewLease() {
  const auto started = std::chrono::steady_clock::now();
  const std::string renew = kube::FormatMicroTime(std::chrono::system_clock::now());
  LS_RETURN_IF_ERROR(client_
                         .MergePatch(kube::resources::Leases(), kLeaseNamespace, name_,
                                     {{"spec", {{"renewTime", renew}, {"holderIdentity", name_}}}})
                         .status());
  const auto done = std::chrono::steady_clock::now();
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto late_after = std::chrono::seconds(options_.lease_duration_s);
  if (renewed_at_ != std::chrono::steady_clock::time_point{} && done - renewed_at_ > late_after) {
    log::Warning(
        "lease renewed late",
        {{"node", name_},
         {"since_last_ms", std::to_string(duration_cast<milliseconds>(done - renewed_at_).count())},
         {"request_ms", std::to_string(duration_cast<milliseconds>(done - started).count())}});
  }
  renewed_at_ = done;
  return Status::Ok();
}

Status NodeRegistration::UpdateStatusIfDue() {
  const auto now = std::chrono::steady_clock::now();
  if (now - status_posted_at_ < kStatusEvery) return Status::Ok();
  LS_RETURN_IF_ERROR(
      client_
          .MergePatch(kube::resources::Nodes(), "", name_,
                      {{"status", {{"conditions", Conditions(registered_at_, NowRfc3339())}}}},
                      "status")
          .status());
  status_posted_at_ = now;
  return Status::Ok();
}

Status NodeRegistration::Unregister() {
  Status node = client_.Delete(kube::resources::Nodes(), "", name_).status();
  Status lease = client_.Delete(kube::resources::Leases(), kLeaseNamespace, name_).status();
  if (!node.ok() && !IsNotFound(node)) return node;
  if (!lease.ok() && !IsNotFound(lease)) return lease;
  return Status::Ok();
}

}  // namespace lockstep::e2e
