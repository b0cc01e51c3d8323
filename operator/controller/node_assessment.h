#pragma once
// Is the node a pod runs on still fit to run it? The node half of the failure detector as pure
// functions (table-tested): the verdict on one node from its Node and its Lease, the verdict a
// pod's own evidence gives, and when a Lease's grace ends. NodeHealthMonitor (node_health.h)
// judges every node with them on its caches' events and on its tick (node_health_pass.h).
//
// Lost, in order of precedence: deleted; Ready=False or Unknown; a NoExecute taint; the
// kube-node-lease Lease not renewed for `lease_grace` (the kubelet renews it every 10 s, so this
// catches a dead node long before the node controller's 40-50 s); cordoned
// (spec.unschedulable) only when `restart_on_cordon`. A node never seen (no Node object and no
// Lease) is lost as deleted. NoSchedule and PreferNoSchedule taints (the cordon's
// node.kubernetes.io/unschedulable among them) never make a node lost by themselves.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/node_verdict.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

struct NodeHealthOptions {
  std::chrono::seconds lease_grace{20};  // --node-lease-grace
  bool restart_on_cordon = false;        // --on-node-cordon=restart (default ignore)
  // --node-silence-hold-fraction: while at least this fraction of the known nodes (and at least
  // 3) are silent at once, silence alone makes no node lost (silence_guard.h); 0 turns it off.
  double silence_hold_fraction = 0.55;
};

// `node` null: the Node object is gone. `lease` null: no Lease seen (not an error by itself: a
// node without a Lease is judged by its conditions only). Unparseable timestamps count as
// absent. `leases_fresh_since`: since when the caller's view of Leases is continuous
// (Reflector::FreshSince): a Lease's silence counts from no earlier than that, and not at all
// while it is in the future (the view is broken). An apiserver that restarts for longer than the
// grace keeps every Lease from being renewed; without this, every node was then lost at once.
NodeVerdict AssessNode(const std::string& name, const kube::Node* node, const kube::Lease* lease,
                       api::Time now, const NodeHealthOptions& options,
                       api::Time leases_fresh_since = api::Time{});

// The taint-eviction controller marked the pod (DisruptionTarget=True, reason
// DeletionByTaintManager) before deleting it for its node's NoExecute taint.
bool MarkedByTaintEviction(const kube::Pod& pod);

// The verdict a pod's own evidence gives on its node: the taint-eviction controller marks a pod
// it deletes for its node's NoExecute taint (DisruptionTarget=True, reason
// DeletionByTaintManager), so the node is tainted even when this operator's Node cache has not
// delivered the taint yet (two watches, no order between them). Without it a pass woken by the
// pod saw a plain disruption and neither named nor excluded the node. Not lost otherwise.
NodeVerdict TaintEvictionVerdict(const kube::Pod& pod);

// A node as the monitor's caches hold it (peer_loss.h corroborates a launcher's report with it).
struct NodeSnapshot {
  std::optional<kube::Node> node;    // nullopt: no Node object (deleted, or never seen)
  std::optional<kube::Lease> lease;  // nullopt: no Lease seen
  // Since when the Lease view is continuous (AssessNode's leases_fresh_since): a renewTime
  // read while it is in the future may be stale.
  api::Time leases_fresh_since;
};

// When the node's Lease would pass the grace if not renewed again (for a timer), silence counted
// from no earlier than `silence_counts_from` as AssessNode counts it; unset without a Lease.
std::optional<api::Time> LeaseDeadline(const kube::Lease& lease, const NodeHealthOptions& options,
                                       api::Time silence_counts_from = api::Time{});

// How long the monitor's tick sleeps after a pass at `now`: `tick`, or until `coalesce` past
// the earliest of `deadlines` still ahead when that comes sooner. A node whose heartbeat
// stopped is then judged `coalesce` after its grace ends, not up to a tick later (half a tick
// on average). The window keeps what the whole tick gave: nodes that died together (their last
// renewals milliseconds apart) are judged in one pass, so their gang restarts once, excluding
// all of them; a wake exactly at the first deadline lost the second by 4 ms, and the job
// restarted twice and excluded only one (FailuresTest.ElasticJobShrinksTo6..., CI of 054cf5e).
// Deadlines already past are ignored: those nodes were judged.
std::chrono::nanoseconds NextTickDelay(api::Time now, const std::vector<api::Time>& deadlines,
                                       std::chrono::nanoseconds tick,
                                       std::chrono::nanoseconds coalesce);

}  // namespace lockstep::controller
