#pragma once
// One Node this agent plays: its object (labels, capacity, Ready condition, addresses) and its
// Lease in kube-node-lease, renewed like a kubelet's but fast (--heartbeat-ms, default 2 s;
// --lease-duration-s, default 10 s) so tests of node loss get quick signals. The Node carries
// no kwok annotation, so kwok leaves it alone.

#include <chrono>
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
  // Renews the Lease: the heartbeat node-loss detection reads (the operator's --node-lease-grace,
  // the node lifecycle controller's grace). Logs a warning when the renewal comes more than
  // a lease duration after the last one (the API server or this host was stalled), so a
  // node lost to a slow heartbeat shows in the agent's log.
  Status RenewLease();
  // Refreshes the Ready condition's heartbeat when kStatusEvery has passed since the last, as a
  // kubelet posts its status every nodeStatusUpdateFrequency (10 s) and renews its Lease more
  // often: on a loaded API server each tick's requests are fewer, so the Leases of all this
  // agent's nodes (renewed first) are not queued behind status writes.
  Status UpdateStatusIfDue();
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
  std::chrono::steady_clock::time_point renewed_at_{};        // the last successful renewal
  std::chrono::steady_clock::time_point status_posted_at_{};  // the last status write
};

// How often a node's status (its Ready condition's heartbeat) is written: a kubelet's
// nodeStatusUpdateFrequency.
inline constexpr std::chrono::seconds kStatusEvery{10};

}  // namespace lockstep::e2e
