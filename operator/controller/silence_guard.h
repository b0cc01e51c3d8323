#pragma once
// Is the nodes' silence the nodes' fault? A Lease that stops being renewed (NodeLeaseExpired) or
// a Ready=Unknown the node controller wrote for a kubelet that stopped posting (NodeUnreachable)
// is the absence of news, and news stops for the control plane's reasons as well as the node's:
// an apiserver too loaded to take the renewals, a partition between the nodes and the apiserver,
// a heartbeat agent starved (kwok's Lease workers in the 500-gang burst, bench/RESULTS.md). When
// most nodes fall silent at once, restarting their gangs deletes healthy pods and adds load to
// the very control plane that starved the heartbeats, and a restart has nowhere to go anyway.
//
// Kubernetes' node lifecycle controller draws the line here: a zone with more than 2 nodes not
// ready and at least 55% of its nodes not ready is in partial disruption, and in a cluster of up
// to 50 nodes it then stops evicting (larger ones evict at a tenth of the rate); every zone fully
// disrupted stops evictions everywhere. This guard applies the same census to the whole cluster
// (the operator does not group nodes by zone: one zone silent among three is a third of the
// nodes, below the line, and handled as the zone's loss): while at least
// `kSilenceHoldMinNodes` nodes and `fraction` of all known nodes are silent, silence alone makes
// no node lost. Explicit evidence still does (NotReady from a live kubelet, a deleted Node, a
// NoExecute taint, a launcher's corroborated peer report). When the census falls below the line,
// the nodes still silent get a fresh Lease grace from that moment (the node lifecycle controller
// resets every node's probe time when a disruption ends): they were silent for the same reason.
//
// Pure; the monitor (node_health.h) counts on its one-second tick and holds the result until the
// next one.

#include "operator/controller/node_verdict.h"

namespace lockstep::controller {

// "More than 2 not ready", as the node lifecycle controller counts.
inline constexpr int kSilenceHoldMinNodes = 3;

// The verdict comes from silence alone: the Lease grace passed, or Ready=Unknown.
bool IsSilenceVerdict(const NodeVerdict& verdict);

// `silent` of `total` known nodes are silent: hold silence verdicts? `fraction` in (0, 1]; 0 (or
// below) turns the guard off (--node-silence-hold-fraction=0).
bool HoldSilence(int silent, int total, double fraction);

// The verdict as the guard lets it stand: a silence verdict while `held` becomes healthy.
NodeVerdict ApplySilenceHold(NodeVerdict verdict, bool held);

}  // namespace lockstep::controller
