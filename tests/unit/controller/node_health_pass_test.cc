// The node health monitor's tick, one pure step at a time (node_health_pass.h), and whole passes
// chained as the tick chains them, at the readings of a FakeClock that the test advances: the
// rules that integration tests can only check with waits (when a silent node is judged, the
// first pass's losses, the silence hold and its fresh grace, forgetting gone nodes).
#include "operator/controller/node_health_pass.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/rfc3339.h"
#include "tests/testing/fake_clock.h"

namespace lockstep::controller {
namespace {

using ::lockstep::testing::FakeClock;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::shared_ptr<const kube::Node> ReadyNode(const std::string& name) {
  auto n = std::make_shared<kube::Node>();
  n->meta.name = name;
  n->ready = kube::Condition{"Ready", "True", "KubeletReady", "", "", ""};
  return n;
}

std::shared_ptr<const kube::Lease> LeaseRenewedAt(const std::string& name, api::Time renewed) {
  auto l = std::make_shared<kube::Lease>();
  l->meta.name = name;
  l->meta.namespace_ = "kube-node-lease";
  l->lease_duration_seconds = 40;
  l->renew_time = FormatMicroTime(renewed);
  return l;
}

// `count` nodes named node-0.., each Ready with a Lease renewed at `renewed`.
KnownNodes Cluster(int count, api::Time renewed) {
  KnownNodes known;
  for (int i = 0; i < count; ++i) {
    const std::string name = "node-" + std::to_string(i);
    known[name] = KnownNode{ReadyNode(name), LeaseRenewedAt(name, renewed)};
  }
  return known;
}

NodeHealthOptions Options() {
  NodeHealthOptions o;
  o.lease_grace = seconds(20);
  o.silence_hold_fraction = 0.55;
  return o;
}

// What the monitor keeps between passes, and one pass as its tick runs it (node_health.cc's
// State::Pass without the caches, the locks and the logging).
struct Monitor {
  NodeHealthOptions options = Options();
  LostNodes lost;
  bool silence_held = false;
  api::Time released_at{};

  std::vector<LostNews> Pass(const KnownNodes& known, api::Time now,
                             milliseconds* delay = nullptr) {
    NodeCensus census = JudgeNodes(known, now, options, SilenceCountsFrom({}, released_at));
    ForgetGoneNodes(lost, known);
    const SilenceGuardStep step = StepSilenceGuard(
        silence_held, census.silent, static_cast<int>(known.size()), options.silence_hold_fraction);
    if (step.changed && !step.held) released_at = now;
    silence_held = step.held;
    if (delay != nullptr) {
      *delay = std::chrono::duration_cast<milliseconds>(
          NextTickDelay(now, census.lease_deadlines, seconds(1), milliseconds(250)));
    }
    return RecordVerdicts(lost, std::move(census.verdicts), step.hold_verdicts);
  }
};

std::vector<std::string> Names(const std::vector<LostNews>& news) {
  std::vector<std::string> out;
  for (const LostNews& n : news) out.push_back(n.node + ":" + n.verdict.reason);
  return out;
}

TEST(RecordVerdictTest, NewLossThenSameReasonThenNewReasonThenRecovery) {
  LostNodes lost;
  NodeVerdict expired{true, "NodeLeaseExpired", "", std::nullopt, {}};
  NodeVerdict unreachable{true, "NodeUnreachable", "", std::nullopt, {}};
  EXPECT_EQ(RecordVerdict(lost, "a", expired), LostChange::kLost);
  EXPECT_EQ(RecordVerdict(lost, "a", expired), LostChange::kNone);
  EXPECT_EQ(RecordVerdict(lost, "a", unreachable), LostChange::kNewReason);
  EXPECT_EQ(lost.at("a"), "NodeUnreachable");
  EXPECT_EQ(RecordVerdict(lost, "a", NodeVerdict{}), LostChange::kNone);
  EXPECT_TRUE(lost.empty());
  EXPECT_EQ(RecordVerdict(lost, "a", expired), LostChange::kLost);  // a later loss is news again
}

TEST(SilenceCountsFromTest, TheLaterOfFreshViewAndRelease) {
  FakeClock clock;
  const api::Time t0 = clock.WallNow();
  EXPECT_EQ(SilenceCountsFrom(t0, {}), t0);
  EXPECT_EQ(SilenceCountsFrom({}, t0), t0);
  EXPECT_EQ(SilenceCountsFrom(t0, t0 + seconds(5)), t0 + seconds(5));
  EXPECT_EQ(SilenceCountsFrom(t0 + seconds(5), t0), t0 + seconds(5));
}

TEST(JudgeNodesTest, CountsSilentNodesAndCollectsLeaseDeadlines) {
  FakeClock clock;
  const api::Time t0 = clock.WallNow();
  KnownNodes known = Cluster(2, t0);
  known["node-1"].lease = LeaseRenewedAt("node-1", t0 - seconds(30));  // silent
  known["gone"] = KnownNode{nullptr, LeaseRenewedAt("gone", t0)};      // Lease only: deleted
  known["no-lease"] = KnownNode{ReadyNode("no-lease"), nullptr};
  const NodeCensus census = JudgeNodes(known, t0, Options(), api::Time{});
  ASSERT_EQ(census.verdicts.size(), 4u);
  EXPECT_EQ(census.verdicts[0].first, "gone");
  EXPECT_EQ(census.verdicts[0].second.reason, "NodeDeleted");
  EXPECT_FALSE(census.verdicts[1].second.lost);  // no-lease: judged by its conditions
  EXPECT_FALSE(census.verdicts[2].second.lost);  // node-0
  EXPECT_EQ(census.verdicts[3].second.reason, "NodeLeaseExpired");
  EXPECT_EQ(census.silent, 1);  // a deleted node is not silent
  EXPECT_EQ(census.lease_deadlines,
            (std::vector<api::Time>{t0 + seconds(20), t0 + seconds(20), t0 - seconds(10)}));
}

TEST(ForgetGoneNodesTest, KeepsOnlyNodesACacheStillNames) {
  FakeClock clock;
  LostNodes lost = {{"node-0", "NodeNotReady"}, {"vanished", "NodeDeleted"}};
  ForgetGoneNodes(lost, Cluster(1, clock.WallNow()));
  EXPECT_EQ(lost, (LostNodes{{"node-0", "NodeNotReady"}}));
}

TEST(StepSilenceGuardTest, HoldsWhileMostAreSilentAndOnThePassThatReleases) {
  struct Row {
    bool was_held;
    int silent, total;
    bool held, hold_verdicts, changed;
  };
  for (const Row& r : std::vector<Row>{{false, 0, 10, false, false, false},
                                       {false, 2, 3, false, false, false},  // below 3 nodes
                                       {false, 3, 5, true, true, true},     // 60%: engages
                                       {true, 3, 5, true, true, false},
                                       {true, 2, 5, false, true, true},  // releases, still held
                                       {false, 5, 10, false, false, false}}) {  // 50%
    const SilenceGuardStep s = StepSilenceGuard(r.was_held, r.silent, r.total, 0.55);
    EXPECT_EQ(s.held, r.held) << r.was_held << " " << r.silent << "/" << r.total;
    EXPECT_EQ(s.hold_verdicts, r.hold_verdicts) << r.was_held << " " << r.silent << "/" << r.total;
    EXPECT_EQ(s.changed, r.changed) << r.was_held << " " << r.silent << "/" << r.total;
  }
  EXPECT_FALSE(StepSilenceGuard(false, 10, 10, 0).held);  // fraction 0: off
}

TEST(RecordVerdictsTest, HeldSilenceIsNoNewsButExplicitEvidenceIs) {
  LostNodes lost;
  std::vector<std::pair<std::string, NodeVerdict>> verdicts = {
      {"a", NodeVerdict{true, "NodeLeaseExpired", "", std::nullopt, {}}},
      {"b", NodeVerdict{true, "NodeNotReady", "", std::nullopt, {}}},
      {"c", NodeVerdict{}}};
  EXPECT_EQ(Names(RecordVerdicts(lost, verdicts, /*hold_silence=*/true)),
            (std::vector<std::string>{"b:NodeNotReady"}));
  EXPECT_EQ(Names(RecordVerdicts(lost, verdicts, /*hold_silence=*/false)),
            (std::vector<std::string>{"a:NodeLeaseExpired"}));  // b is no news the second time
}

// A node whose kubelet stops renewing is judged one coalesce window after its grace ends: the
// tick sleeps until then instead of a whole second.
TEST(NodeHealthPassTest, ASilentNodeIsLostACoalesceWindowAfterItsGrace) {
  FakeClock clock;
  const api::Time renewed = clock.WallNow();
  KnownNodes known = Cluster(4, renewed);
  Monitor m;
  clock.Advance(milliseconds(19'900));
  milliseconds delay{};
  EXPECT_TRUE(m.Pass(known, clock.WallNow(), &delay).empty());
  EXPECT_EQ(delay, milliseconds(350));  // 100 ms to the grace's end, then the 250-ms window
  // The other nodes renew meanwhile; node-2 does not.
  for (const std::string name : {"node-0", "node-1", "node-3"}) {
    known[name].lease = LeaseRenewedAt(name, clock.WallNow());
  }
  clock.Advance(delay);
  EXPECT_EQ(Names(m.Pass(known, clock.WallNow(), &delay)),
            (std::vector<std::string>{"node-2:NodeLeaseExpired"}));
  EXPECT_EQ(delay, seconds(1));  // the next graces are 20 s away
  clock.Advance(delay);
  EXPECT_TRUE(m.Pass(known, clock.WallNow()).empty());  // reported once
}

// Most nodes silent at once is the control plane's problem: nothing is lost while the census
// holds, and the nodes still silent when it falls get a fresh grace from that pass on.
TEST(NodeHealthPassTest, SilenceHoldThenFreshGraceForTheStragglers) {
  FakeClock clock;
  KnownNodes known = Cluster(5, clock.WallNow());
  Monitor m;
  clock.Advance(seconds(25));  // every Lease 25 s old: 5 of 5 silent
  EXPECT_TRUE(m.Pass(known, clock.WallNow()).empty());
  EXPECT_TRUE(m.silence_held);
  // Three come back; two are still silent: below the line, the hold is released, and this
  // pass's verdicts are still held.
  for (const std::string name : {"node-0", "node-1", "node-2"}) {
    known[name].lease = LeaseRenewedAt(name, clock.WallNow());
  }
  clock.Advance(seconds(1));
  const api::Time released = clock.WallNow();
  EXPECT_TRUE(m.Pass(known, released).empty());
  EXPECT_FALSE(m.silence_held);
  EXPECT_EQ(m.released_at, released);
  // Their silence counts from the release: not lost within the grace...
  clock.Advance(seconds(20));
  for (const std::string name : {"node-0", "node-1", "node-2"}) {
    known[name].lease = LeaseRenewedAt(name, clock.WallNow());
  }
  EXPECT_TRUE(m.Pass(known, clock.WallNow()).empty());
  // ...and lost once it ends.
  clock.Advance(milliseconds(1));
  EXPECT_EQ(Names(m.Pass(known, clock.WallNow())),
            (std::vector<std::string>{"node-3:NodeLeaseExpired", "node-4:NodeLeaseExpired"}));
}

// A lost node that leaves both caches is forgotten, so a new node of that name that is lost is
// reported again.
TEST(NodeHealthPassTest, AGoneNodeIsForgottenAndItsNameIsNewAgain) {
  FakeClock clock;
  KnownNodes known = Cluster(3, clock.WallNow());
  auto not_ready = std::make_shared<kube::Node>(*ReadyNode("node-1"));
  not_ready->ready->status = "False";
  known["node-1"].node = not_ready;
  Monitor m;
  EXPECT_EQ(Names(m.Pass(known, clock.WallNow())),
            (std::vector<std::string>{"node-1:NodeNotReady"}));
  known.erase("node-1");
  clock.Advance(seconds(1));
  EXPECT_TRUE(m.Pass(known, clock.WallNow()).empty());
  EXPECT_EQ(m.lost.count("node-1"), 0u);
  known["node-1"] = KnownNode{not_ready, LeaseRenewedAt("node-1", clock.WallNow())};
  clock.Advance(seconds(1));
  EXPECT_EQ(Names(m.Pass(known, clock.WallNow())),
            (std::vector<std::string>{"node-1:NodeNotReady"}));
}

}  // namespace
}  // namespace lockstep::controller
