#pragma once
// The job's NetworkPolicy `<job>-launcher`, created with its Service and Secret. Ingress to the
// job's pods is allowed:
//  - from the job's own pods, on every port: NCCL, Gloo and the frameworks' servers (TensorFlow's
//    gRPC, Ray's GCS and object managers, JAX's coordinator, Horovod's) pick theirs, often at
//    random;
//  - from the operator, on the rendezvous port (status and in-place restart requests);
//  - from anyone, on the ports the templates declare with `containerPort` (a dashboard, a
//    metrics endpoint the user means others to reach), never the launcher's three;
// and nowhere else (issue 44 item 5). Before, every port but the launcher's was open to every
// pod of the cluster, so a framework's unauthenticated server (Ray's GCS, TensorFlow's gRPC)
// was any tenant's to call. It protects only where the cluster's CNI enforces NetworkPolicy
// (docs/install.md).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "operator/api/types.h"

namespace lockstep::api {

// The node-0 store ports the operator gives every launcher (LOCKSTEP_MASTER_PORT and
// LOCKSTEP_KV_PORT), so the policy and the servers agree whatever a template's env says.
inline constexpr int32_t kMasterPort = 29500;
inline constexpr int32_t kKvPort = 29501;

// Who the operator is, for the control rule; an empty namespace leaves that rule out (an
// operator outside the cluster reaches no pod through a NetworkPolicy anyway).
struct OperatorPeer {
  std::string namespace_name;
  std::map<std::string, std::string> pod_labels;
};

std::string NetworkPolicyName(std::string_view job_name);
// The (protocol, port) list the templates declare, as NetworkPolicyPort objects: the policy's
// rule for everyone. Ports outside 1-65535, unknown protocols and the launcher's ports are left
// out (those are the job's own).
nlohmann::json DeclaredPorts(const TrainingJob& job);
nlohmann::json BuildNetworkPolicy(const TrainingJob& job, const OperatorPeer& op);

}  // namespace lockstep::api
