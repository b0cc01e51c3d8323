#pragma once
// The node half of the failure detector: is the node a pod runs on still fit to run it?
// `AssessNode` is pure (table-tested); `NodeHealthMonitor` keeps the Node and node-Lease caches,
// re-assesses on their events and on a one-second tick that also wakes a quarter second after a
// Lease's grace ends (a Lease that stops being renewed makes no event), and reports each node that
// turns lost so the controller can enqueue the jobs with pods on it.
//
// Lost, in order of precedence: deleted; Ready=False or Unknown; a NoExecute taint; the
// kube-node-lease Lease not renewed for `lease_grace` (the kubelet renews it every 10 s, so this
// catches a dead node long before the node controller's 40-50 s); cordoned
// (spec.unschedulable) only when `restart_on_cordon`. A node never seen (no Node object and no
// Lease) is lost as deleted. NoSchedule and PreferNoSchedule taints (the cordon's
// node.kubernetes.io/unschedulable among them) never make a node lost by themselves.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/node_verdict.h"
#include "operator/kube/decode_pool.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

class ControllerMetrics;

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

// Thread-safe. Owns two informers (Nodes cluster-wide, Leases in kube-node-lease) and a tick
// thread. Memory: the two caches plus one entry per node currently lost. Each tick also counts
// the nodes silent at once and sets the silence guard (silence_guard.h) for the next second;
// it logs each change of the guard and exports it (lockstep_nodes_silent,
// lockstep_node_silence_held).
class NodeHealthMonitor {
 public:
  using LostHandler = std::function<void(const std::string& node, const NodeVerdict& verdict)>;

  // `metrics` may be null; when set, each loss (not a later change of its reason) counts in
  // lockstep_node_failures_detected_total and, when its failure time is known and the monitor
  // was already watching, in lockstep_detection_delay_seconds.
  // `node_pool`: shared with the gang scheduler's node cache (kube/object_pools.h); null: nodes
  // decoded for this monitor alone.
  NodeHealthMonitor(kube::RestClient& client, NodeHealthOptions options,
                    ControllerMetrics* metrics = nullptr,
                    std::shared_ptr<kube::DecodePool<kube::Node>> node_pool = nullptr);
  ~NodeHealthMonitor();

  // Before Start(). Called (from a cache or the tick thread, never under a lock of the monitor)
  // once per transition to lost, and again if the reason changes. A node that recovers (or
  // disappears from both caches) is forgotten, so a later loss is reported again.
  void SetLostHandler(LostHandler handler);
  void Start();
  void RequestStop();  // without waiting; Stop() waits
  void Stop();
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  // "nodes", "leases", both, or "" once both caches have synced.
  std::string UnsyncedCaches() const;

  // The verdict on `node` from the caches. Before both caches have synced every node is
  // healthy: a partial cache would call live nodes deleted. While the silence guard holds (the
  // last tick's census, silence_guard.h) a verdict from silence alone is healthy too.
  NodeVerdict Assess(const std::string& node, api::Time now) const;
  // The last tick found most nodes silent at once: silence verdicts are held.
  bool SilenceHeld() const;
  // The Node and its Lease from the caches; nullopt before both caches have synced.
  std::optional<NodeSnapshot> Snapshot(const std::string& node) const;
  const NodeHealthOptions& options() const { return options_; }

 private:
  struct State;
  NodeHealthOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace lockstep::controller
