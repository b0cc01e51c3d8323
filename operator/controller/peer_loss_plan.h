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

#include "operator/controller/plan_pass.h"

namespace lockstep::controller {

inline constexpr std::chrono::seconds kPeerLossPollInterval{1};

// True when it decided a Recreate restart (the pass ends there).
bool PlanPeerLoss(Pass& p);

}  // namespace lockstep::controller
