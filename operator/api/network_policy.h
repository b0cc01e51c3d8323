#pragma once
// The job's NetworkPolicy `<job>-launcher`, created with its Service and Secret: only the job's
// own pods reach the ports its launchers serve (the rendezvous server, the TCPStore-compatible
// store, the Gloo KV server: torch's store and Horovod's KV have no authentication of their
// own), and the operator reaches the rendezvous port for its control requests (status,
// in-place restart). The job's own pods reach every port of each other (NCCL, Gloo and the
// frameworks' servers pick theirs); anyone else keeps every other port, so a user's dashboard
// or metrics endpoint in the pods still works. It protects only where the cluster's CNI
// enforces NetworkPolicy (docs/install.md).

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
nlohmann::json BuildNetworkPolicy(const TrainingJob& job, const OperatorPeer& op);

}  // namespace lockstep::api
