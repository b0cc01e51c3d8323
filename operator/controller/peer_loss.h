#pragma once
// Peer-corroborated node loss (docs/failures.md "Peer evidence"): node 0's rendezvous server
// reports a member it lost ("node rank r, pod P on node N, last heard at T", protocol::
// LostMember); is that report corroborated by a signal the operator checks itself? Pure;
// table-tested in tests/unit/controller/peer_loss_test.cc.
//
// The report alone is never enough: a partition between two pods looks the same to node 0 as a
// dead node. Corroborated when an independent signal agrees:
//   - N's Node is deleted, Ready=False/Unknown, or carries a NoExecute taint; or
//   - the operator's own probe of P (a TCP connect to P's IP at the rendezvous port: a connection
//     or a refusal means P's network answers) cannot reach P, AND N's Lease was not renewed after
//     T (a clock skew between node 0 and the operator allowed), while the operator's Lease view
//     is continuous.
// The report must also still be about P as the operator sees it: a pod of the current attempt,
// the same pod object (uid) on the node the report names, neither finished nor being deleted (else the existing paths
// act: a failed pod, a deleted one).
//
// Fencing: a corroborated report is acted on (a Recreate restart) no earlier than when P's
// launcher has stopped its ranks by itself, had it been alive: at once for a member whose
// connection closed (its launcher exited, its children with it by PDEATHSIG, or it saw the close
// and killed them), and for a silent member once its launcher would have noticed the server's
// silence: T + peer timeout + heartbeat interval (its check runs every interval), plus the skew.

#include <chrono>
#include <optional>
#include <string>

#include "operator/api/types.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/node_health.h"
#include "operator/kube/objects.h"
#include "protocol/messages.h"
#include "protocol/contract.h"

namespace lockstep::controller {

inline constexpr char kReasonPeerReportedLost[] = "PeerReportedLost";

struct PeerLossOptions {
  // The launchers' --peer-timeout and --heartbeat-interval (the operator leaves the defaults).
  std::chrono::milliseconds peer_timeout = protocol::contract::kDefaultPeerTimeout;
  std::chrono::milliseconds heartbeat_interval = protocol::contract::kDefaultHeartbeatInterval;
  // How far node 0's wall clock and the operator's may disagree.
  std::chrono::milliseconds clock_skew{1000};
};

struct LossEvidence {
  protocol::LostMember report;
  // P as the operator sees it: the current attempt's pod of that name; null when there is none.
  const kube::Pod* pod = nullptr;
  // N (P's node as the operator sees it) from the node caches; nullopt before they synced.
  std::optional<NodeSnapshot> node;
  ProbeResult probe = ProbeResult::kUnknown;
  std::string probe_detail;  // for people: "connect to 10.0.0.7:29400 timed out after 1000ms"
  api::Time now;
};

struct LossVerdict {
  enum class Outcome {
    kCorroborated,     // restart now, excluding `node`
    kWaiting,          // corroborated, but the fence (act_at) has not passed; or the probe is
                       // still to come (act_at unset)
    kNotCorroborated,  // no independent signal agrees: nothing (the Lease and join paths stay)
    kStale,            // the report is no longer about a running pod of this attempt
  };
  Outcome outcome = Outcome::kNotCorroborated;
  // What corroborated it: NodeDeleted, NodeNotReady, NodeUnreachable, NodeTainted, or
  // LauncherUnreachable (the probe and the Lease).
  std::string signal;
  std::string node;                         // N, as the operator sees it
  std::string evidence;                     // for people: the report, the signal, the Lease age
  std::optional<double> lease_age_seconds;  // now - N's last renewal, when known
  std::optional<api::Time> act_at;          // kWaiting: when the fence allows the restart
};
std::string_view ToString(LossVerdict::Outcome o);

LossVerdict CorroborateLoss(const LossEvidence& e, const PeerLossOptions& options = {});

// The report's times as api::Time.
api::Time FromUnixMs(uint64_t ms);

}  // namespace lockstep::controller
