#include "operator/api/network_policy.h"

#include "operator/api/children.h"

namespace lockstep::api {

using nlohmann::json;

namespace {

json TcpRange(int32_t first, int32_t last) {
  json port = {{"protocol", "TCP"}, {"port", first}};
  if (last > first) port["endPort"] = last;
  return port;
}

// Every TCP port but the launcher's, and every UDP port: what pods outside the job may reach.
json PortsButTheLaunchers() {
  json ports = json::array();
  int32_t next = 1;
  for (int32_t served : {kRdzvPort, kMasterPort, kKvPort}) {  // ascending
    if (served > next) ports.push_back(TcpRange(next, served - 1));
    next = served + 1;
  }
  ports.push_back(TcpRange(next, 65535));
  ports.push_back({{"protocol", "UDP"}});
  return ports;
}

}  // namespace

std::string NetworkPolicyName(std::string_view job_name) {
  return std::string(job_name) + "-launcher";
}

json BuildNetworkPolicy(const TrainingJob& job, const OperatorPeer& op) {
  const json own_pods = {{"podSelector", {{"matchLabels", {{kLabelJobName, job.metadata.name}}}}}};
  json ingress = json::array({
      {{"from", json::array({own_pods})}},
      {{"ports", PortsButTheLaunchers()}},
  });
  if (!op.namespace_name.empty()) {
    json peer = {{"namespaceSelector",
                  {{"matchLabels", {{"kubernetes.io/metadata.name", op.namespace_name}}}}}};
    if (!op.pod_labels.empty()) peer["podSelector"] = {{"matchLabels", op.pod_labels}};
    ingress.push_back({{"from", json::array({peer})},
                       {"ports", json::array({TcpRange(kRdzvPort, kRdzvPort)})}});
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
