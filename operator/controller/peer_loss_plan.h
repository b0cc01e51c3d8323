#pragma once
// The peer-evidence step of ComputePlan (docs/failures.md "Peer evidence"), pure like the rest:
// node 0's launcher reports members it lost (Observed::launchers, status.lost); for each, the
// step asks the monitor to probe the pod (Plan::launcher_probes), judges the report with
// CorroborateLoss (peer_loss.h) against the pod, its node's Node and Lease
// (Observed::peer_loss_nodes) and the probe, and on a corroborated report makes a Recreate
// restart at once: a disruption (maxDisruptions, no backoff), reason PeerReportedLost, the node
// excluded and its pods force-deleted, the evidence in the event and lastRestart.message,
// without waiting for --node-lease-grace. A report not corroborated changes nothing (the Lease
// and join-timeout paths stay); the pass notes each verdict (Plan::peer_loss) for the log and
// the metric. While a report is unresolved the job is polled every second.

#include <chrono>
#include <string>
#include <vector>

#include "operator/controller/peer_loss.h"
#include "operator/controller/plan_pass.h"
#include "protocol/messages.h"

namespace lockstep::controller {

inline constexpr std::chrono::seconds kPeerLossPollInterval{1};

// True when it decided a Recreate restart (the pass ends there). A lost member whose node-rank a
// hot spare took (status.serving, promoted for a later round) is skipped: the spare covers it.
// O(lost + pods + serving): the answer is the tenant's (worker-0's launcher), at most one lost
// member per node-rank of the job (protocol CheckControlBounds), and the pass looks each one up in
// indexes built once, never by a scan of the pods per member (issue 44 item 1).
bool PlanPeerLoss(Pass& p);

// The nodes of `pods` that the lost members name by pod name, each once, in the order of `pods`:
// the nodes whose Node and Lease the pass needs (Observed::peer_loss_nodes; the reconciler reads
// them from its caches). A member with no pod name, or naming no pod, adds none; a pod not bound
// adds none. O(lost + pods).
std::vector<std::string> ReportedNodes(const std::vector<protocol::LostMember>& lost,
                                       const std::vector<kube::Pod>& pods);

// The launchers' peer timeout and heartbeat interval the fence waits for (peer_loss.h FenceTime):
// the defaults, or longer where a template's trainer env sets LOCKSTEP_PEER_TIMEOUT /
// LOCKSTEP_HEARTBEAT_INTERVAL (the operator does not set them, so a user may). Never shorter than
// the defaults: a shorter fence is only an optimisation, a longer one is what keeps a
// partitioned launcher's ranks from running beside the next attempt.
PeerLossOptions LauncherTimings(const api::TrainingJobSpec& spec);

// The lost member's node-rank is served by a spare promoted after its round (spare_plan.h).
bool CoveredBySpare(const protocol::ControlStatus& status, const protocol::LostMember& m);

}  // namespace lockstep::controller
