#include "operator/api/network_policy.h"

#include <set>
#include <utility>

#include "operator/api/children.h"

namespace lockstep::api {

using nlohmann::json;

namespace {

json TcpPort(int32_t port) { return {{"protocol", "TCP"}, {"port", port}}; }

bool IsLaunchersPort(int64_t port) {
  return port == kRdzvPort || port == kMasterPort || port == kKvPort;
}

// The ports a template's containers (sidecars among its init containers too) declare with
// `containerPort`, the launcher's three left out: the ones the user means others to reach (a
// dashboard, a metrics endpoint). Ordered and deduplicated by (protocol, port).
void CollectDeclaredPorts(const json& pod_template, std::set<std::pair<std::string, int32_t>>* out) {
  if (!pod_template.is_object() || !pod_template.contains("spec")) return;
  const json& spec = pod_template["spec"];
  if (!spec.is_object()) return;
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const json& container : spec[list]) {
      if (!container.is_object() || !container.contains("ports") ||
          !container["ports"].is_array()) {
        continue;
      }
      for (const json& port : container["ports"]) {
        if (!port.is_object() || !port.contains("containerPort")) continue;
        const json& number = port["containerPort"];
        if (!number.is_number_integer()) continue;
        const int64_t value = number.get<int64_t>();
        if (value < 1 || value > 65535 || IsLaunchersPort(value)) continue;
        std::string protocol = port.value("protocol", std::string("TCP"));
        if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") continue;
        out->emplace(std::move(protocol), static_cast<int32_t>(value));
      }
    }
  }
}

}  // namespace

json DeclaredPorts(const TrainingJob& job) {
  std::set<std::pair<std::string, int32_t>> declared;
  CollectDeclaredPorts(job.spec.pod_template, &declared);
  for (const Role& role : job.spec.roles) CollectDeclaredPorts(role.pod_template, &declared);
  json ports = json::array();
  for (const auto& [protocol, port] : declared) {
    ports.push_back({{"protocol", protocol}, {"port", port}});
  }
  return ports;
}

std::string NetworkPolicyName(std::string_view job_name) {
  return std::string(job_name) + "-launcher";
}

json BuildNetworkPolicy(const TrainingJob& job, const OperatorPeer& op) {
  const json own_pods = {{"podSelector", {{"matchLabels", {{kLabelJobName, job.metadata.name}}}}}};
  json ingress = json::array({{{"from", json::array({own_pods})}}});
  if (json declared = DeclaredPorts(job); !declared.empty()) {
    ingress.push_back({{"ports", std::move(declared)}});
  }
  if (!op.namespace_name.empty()) {
    json peer = {{"namespaceSelector",
                  {{"matchLabels", {{"kubernetes.io/metadata.name", op.namespace_name}}}}}};
    if (!op.pod_labels.empty()) peer["podSelector"] = {{"matchLabels", op.pod_labels}};
    ingress.push_back({{"from", json::array({peer})},
                       {"ports", json::array({TcpPort(kRdzvPort)})}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", ChildMetadata(job, NetworkPolicyName(job.metadata.name))},
          {"spec",
           {{"podSelector", own_pods["podSelector"]},
            {"policyTypes", json::array({"Ingress"})},
            {"ingress", std::move(ingress)}}}};
}

}  // namespace lockstep::api
