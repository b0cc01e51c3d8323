#pragma once
// NodeHealthMonitor: the node half of the failure detector, live. It keeps the Node and
// node-Lease caches, re-assesses a node on their events (node_assessment.h) and every node on a
// one-second tick that also wakes a quarter second after a Lease's grace ends (a Lease that stops
// being renewed makes no event), and reports each node that turns lost so the controller can
// enqueue the jobs with pods on it.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "operator/api/types.h"
#include "operator/controller/node_assessment.h"
#include "operator/controller/node_verdict.h"
#include "operator/kube/decode_pool.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

class ControllerMetrics;

// Thread-safe. Owns two informers (Nodes cluster-wide, Leases in kube-node-lease) and a tick
// thread, whose pass runs node_health_pass.h's pure steps at the clock's time. Memory: the two
// caches plus one entry per node currently lost. Each tick also counts the nodes silent at once
// and sets the silence guard (silence_guard.h) for the next second; it logs each change of the
// guard and exports it (lockstep_nodes_silent, lockstep_node_silence_held).
class NodeHealthMonitor {
 public:
  using LostHandler = std::function<void(const std::string& node, const NodeVerdict& verdict)>;

  // `metrics` may be null; when set, each loss (not a later change of its reason) counts in
  // lockstep_node_failures_detected_total and, when its failure time is known and the monitor
  // was already watching, in lockstep_detection_delay_seconds.
  // `node_pool`: shared with the gang scheduler's node cache (kube/object_pools.h); null: nodes
  // decoded for this monitor alone. `clock` times every verdict (its wall time) and the cache
  // waits; it outlives the monitor.
  NodeHealthMonitor(kube::RestClient& client, NodeHealthOptions options,
                    ControllerMetrics* metrics = nullptr,
                    std::shared_ptr<kube::DecodePool<kube::Node>> node_pool = nullptr,
                    const Clock& clock = RealClock::Get());
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
