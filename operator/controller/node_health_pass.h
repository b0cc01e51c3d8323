#pragma once
// One pass of the node health monitor's tick (node_health.h) as pure steps, which the monitor
// calls in this order under its own locks, with the time its Clock gives:
//   1. JudgeNodes: every node the caches name, judged at one instant (AssessNode), the silent
//      ones counted (silence_guard.h) and the Lease deadlines collected for NextTickDelay;
//   2. ForgetGoneNodes: lost nodes that no cache names any more are forgotten;
//   3. StepSilenceGuard: the census sets the silence guard, which may hold this pass's verdicts;
//   4. RecordVerdicts: the verdicts, after the guard, become the news to report (RecordVerdict
//      is also the one step of an event that concerns a single node).
// Table-tested with a FakeClock's readings (tests/unit/controller/node_health_pass_test.cc), so
// the tick's rules need no waits to test.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/node_assessment.h"
#include "operator/controller/node_verdict.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

// A node as the caches hold it at one instant: its Node, its Lease, or both.
struct KnownNode {
  std::shared_ptr<const kube::Node> node;    // null: no Node object (deleted, or never seen)
  std::shared_ptr<const kube::Lease> lease;  // null: no Lease seen
};
// By node name (a node's Lease is named after it), in name order.
using KnownNodes = std::map<std::string, KnownNode>;

// node -> the reason of its loss, for each node reported lost and not recovered since.
using LostNodes = std::unordered_map<std::string, std::string>;

enum class LostChange { kNone, kLost, kNewReason };

// Records `verdict` on `node` in `lost` and says what is news: a new loss, or a lost node's new
// reason (the node controller turns a silent node's lease expiry into Ready=Unknown 20-30 s
// later). A node that is not lost is forgotten, so its next loss is news again.
LostChange RecordVerdict(LostNodes& lost, const std::string& node, const NodeVerdict& verdict);

// Since when a Lease's silence counts: the Lease view's continuity (Reflector::FreshSince) or
// the last release of the silence hold, whichever is later. The nodes still silent when most
// came back were silent for the same reason and get a fresh grace, as the node lifecycle
// controller resets every node's probe time when a disruption ends.
api::Time SilenceCountsFrom(api::Time leases_fresh_since, api::Time silence_released_at);

// Step 1: every node in `known` judged at `now`, silence counted from `silence_counts_from`.
struct NodeCensus {
  std::vector<std::pair<std::string, NodeVerdict>> verdicts;  // before the guard, name order
  int silent = 0;                                             // silence verdicts among them
  std::vector<api::Time> lease_deadlines;                     // LeaseDeadline of each Lease
};
NodeCensus JudgeNodes(const KnownNodes& known, api::Time now, const NodeHealthOptions& options,
                      api::Time silence_counts_from);

// Step 2: a lost node in neither cache any more is forgotten: nothing can run there now, and a
// node of that name that comes back is a new node.
void ForgetGoneNodes(LostNodes& lost, const KnownNodes& known);

// Step 3: the silence guard from one census, given whether the last pass held it.
struct SilenceGuardStep {
  bool held = false;           // the guard holds until the next pass (HoldSilence)
  bool hold_verdicts = false;  // this pass's silence verdicts are held: while the guard holds,
                               // and on the pass that releases it too (they were judged before
                               // the fresh grace; the next pass judges with it)
  bool changed = false;        // engaged or released by this pass (the monitor logs it)
};
SilenceGuardStep StepSilenceGuard(bool was_held, int silent, int total, double fraction);

// Step 4: what one pass reports, in `verdicts`' order; `lost` records every verdict.
struct LostNews {
  std::string node;
  NodeVerdict verdict;  // after the silence guard
  LostChange change = LostChange::kNone;
};
std::vector<LostNews> RecordVerdicts(LostNodes& lost,
                                     std::vector<std::pair<std::string, NodeVerdict>> verdicts,
                                     bool hold_silence);

}  // namespace lockstep::controller
