#pragma once
// One Node this agent plays: its object (labels, capacity, Ready condition, addresses) and its
// Lease in kube-node-lease, renewed like a kubelet's but fast (--heartbeat-ms, default 2 s;
// --lease-duration-s, default 10 s) so tests of node loss get quick signals. The Node carries
// no kwok annotation, so kwok leaves it alone.

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/options.h"

namespace lockstep::e2e {

inline constexpr char kAgentNodeLabel[] = "lockstep.dev/test-node-agent";

struct NodeResources {
  int64_t cpus = 1;
  int64_t memory_kib = 0;
};

// What the host really has (cpu count, MemTotal).
NodeResources HostResources();

// The Node object to create (status included: nodes accept status on create). `kubelet_port`
// is status.daemonEndpoints.kubeletEndpoint.Port, where the apiserver sends `kubectl logs`.
nlohmann::json BuildNode(const AgentOptions& options, const std::string& name,
                         const std::string& host_ip, const NodeResources& resources,
                         int kubelet_port = 0);

class NodeRegistration {
 public:
  NodeRegistration(kube::RestClient& client, const AgentOptions& options, std::string name,
                   std::string host_ip, int kubelet_port);

  // Creates the Node (replacing a stale one left by a crashed agent; refusing one that is not
  // an agent node) and its Lease.
  Status Register();
  // Renews the Lease and refreshes the Ready condition's heartbeat.
  Status Heartbeat();
  // Deletes the Node (its Lease goes with it through the owner reference) and the Lease.
  Status Unregister();

  const std::string& name() const { return name_; }

 private:
  Status EnsureLease(const std::string& node_uid);

  kube::RestClient& client_;
  const AgentOptions& options_;
  const std::string name_;
  const std::string host_ip_;
  const int kubelet_port_;
  std::string registered_at_;
};

}  // namespace lockstep::e2e
