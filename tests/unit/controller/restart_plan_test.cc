// Gang restarts through ComputePlan, pass by pass: the decision (attempt bump, counters, backoff,
// lastRestart, excluded nodes, deletes, condition, event), the wait for the old pods and the
// backoff, the new attempt's pods, and the recovery. Also the pure helpers of restart_plan.h
// (the attempt split's are in pod_attempt_test.cc).
#include "operator/controller/restart_plan.h"

#include <gtest/gtest.h>

#include <limits>

#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/api/time.h"
#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;
using testing::FailedPod;
using testing::InAttempt;
using testing::Job;
using testing::LostNode;
using testing::Pod;
using testing::T0;
using testing::Terminating;

Plan RunPass(const CachedJob& job, const std::vector<kube::Pod>& pods, api::Time now,
             std::map<std::string, NodeVerdict> lost = {}, bool settled = true) {
  Observed observed{pods, true, std::move(lost)};
  return ComputePlan(job, observed, now, settled, PlanOptions{"launcher:test", seconds(300)});
}

// A 2-worker job whose attempt-0 gang started at T0.
CachedJob Started() {
  CachedJob job = Job(2);
  job.job.status.start_time = T0();
  return job;
}

std::vector<std::string> Reasons(const Plan& plan) {
  std::vector<std::string> out;
  for (const EventSpec& e : plan.events) out.push_back(e.reason);
  return out;
}

const api::Condition& Cond(const Plan& plan, std::string_view type) {
  const api::Condition* c = api::FindCondition(plan.status.conditions, type);
  EXPECT_NE(c, nullptr) << type;
  static const api::Condition kNone;
  return c != nullptr ? *c : kNone;
}

std::string CreatedAttempt(const nlohmann::json& pod) {
  return pod["metadata"]["labels"][std::string(api::kLabelAttempt)].get<std::string>();
}

TEST(RestartPlanTest, FailureBackoffDoublesToTheCap) {
  const api::Backoff defaults;  // 10 s doubling to 300 s
  std::vector<int64_t> waits;
  for (int32_t consecutive = 0; consecutive < 8; ++consecutive) {
    waits.push_back(FailureBackoff(defaults, consecutive).count());
  }
  EXPECT_EQ(waits, (std::vector<int64_t>{10, 20, 40, 80, 160, 300, 300, 300}));
  EXPECT_EQ(FailureBackoff(defaults, 1000).count(), 300);  // no overflow
  EXPECT_EQ(FailureBackoff(api::Backoff{7, 20, 600}, 2).count(), 20);
  EXPECT_EQ(FailureBackoff(api::Backoff{0, 300, 600}, 3).count(), 0);  // no backoff
}

TEST(RestartPlanTest, PodFailureStartsTheNextAttempt) {
  CachedJob job = Started();
  kube::Pod failed = FailedPod("worker", 1, 1);
  failed.container_statuses[0].finished_at = "2027-01-15T08:00:00Z";
  const api::Time now = *api::ParseTime("2027-01-15T08:00:02Z");
  const Plan plan = RunPass(job, {Pod("worker", 0, "Running"), failed}, now);

  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.restarts.failures, 1);
  EXPECT_EQ(plan.status.restarts.disruptions, 0);
  EXPECT_EQ(plan.status.restarts.consecutive, 1);
  ASSERT_TRUE(plan.status.last_restart.has_value());
  const api::LastRestart& last = *plan.status.last_restart;
  EXPECT_EQ(last.time, now);
  EXPECT_EQ(last.reason, "PodFailed");
  EXPECT_NE(last.message.find("job-worker-1"), std::string::npos);
  EXPECT_EQ(last.attempt, 1);
  EXPECT_EQ(last.backoff_seconds, 10);
  EXPECT_EQ(last.mode, api::RestartMode::kRecreate);
  EXPECT_TRUE(last.nodes.empty());
  EXPECT_TRUE(plan.status.excluded_nodes.empty());

  // Every pod of attempt 0 goes, with its own grace period; nothing is created yet.
  ASSERT_EQ(plan.pod_deletes.size(), 2u);
  for (const PodDeletion& d : plan.pod_deletes) EXPECT_FALSE(d.grace_period_seconds);
  EXPECT_TRUE(plan.pod_creates.empty());

  EXPECT_EQ(plan.status.state, api::JobState::kRestarting);
  EXPECT_EQ(plan.status.reason, "PodFailed");
  EXPECT_EQ(Cond(plan, api::kConditionRestarting).status, api::ConditionStatus::kTrue);
  EXPECT_EQ(Cond(plan, api::kConditionRestarting).reason, "PodFailed");
  EXPECT_EQ(Cond(plan, api::kConditionRunning).status, api::ConditionStatus::kFalse);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "PodFailed");
  EXPECT_NE(plan.events[0].message.find("restarting the gang as attempt 1 after a 10s backoff"),
            std::string::npos)
      << plan.events[0].message;
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(plan.requeue_after->count(), 10);
  EXPECT_EQ(plan.outcome, Outcome::kNone);

  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_EQ(plan.restart->reason, "PodFailed");
  EXPECT_EQ(plan.restart->mode, api::RestartMode::kRecreate);
  ASSERT_TRUE(plan.restart->detection_delay_seconds.has_value());
  EXPECT_DOUBLE_EQ(*plan.restart->detection_delay_seconds, 2.0);
}

TEST(RestartPlanTest, InPlaceRestartsOfTheFailedLauncherAreAddedToFailures) {
  CachedJob job = Started();
  job.job.spec.failure_policy.max_restarts = 5;
  kube::Pod failed = FailedPod("worker", 0, 78);
  failed.container_statuses[0].message =
      R"({"reason":"timeout","restartCount":2,"stderrTail":[]})";
  const Plan plan = RunPass(job, {failed, Pod("worker", 1, "Running")}, T0());
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.restarts.failures, 3);  // 2 in place + this one
  EXPECT_EQ(plan.status.last_restart->reason, "RendezvousTimeout");
}

TEST(RestartPlanTest, RestartJobAndIgnoreMaxRestartsCountsNoFailureButBacksOff) {
  CachedJob job = Started();
  api::FailureRule rule;
  rule.name = "flaky-nccl";
  rule.action = api::RuleAction::kRestartJobAndIgnoreMaxRestarts;
  rule.on_exit_codes.values = {134};
  job.job.spec.failure_policy.rules = {rule};
  job.job.status.restarts.failures = 3;  // maxRestarts used up
  const Plan plan = RunPass(job, {FailedPod("worker", 0, 134)}, T0());
  EXPECT_EQ(plan.outcome, Outcome::kNone);
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.restarts.failures, 3);
  EXPECT_EQ(plan.status.last_restart->backoff_seconds, 10);
}

TEST(RestartPlanTest, LostNodeForceDeletesItsPodsAndExcludesTheNode) {
  CachedJob job = Started();
  const std::vector<kube::Pod> pods = {
      Pod("worker", 0, "Running", "node-lost"),
      Terminating(Pod("worker", 1, "Running", "node-lost")),  // stuck: only a force delete ends it
      Terminating(Pod("worker", 2, "Running", "node-ok")),    // its kubelet will finish it
      Pod("worker", 3, "Running", "node-ok")};
  job.job.spec.replicas = 4;
  const Plan plan =
      RunPass(job, pods, T0(),
              {{"node-lost", LostNode("NodeLeaseExpired", "node node-lost: lease not renewed")}});

  std::map<std::string, std::optional<int64_t>> deletes;
  for (const PodDeletion& d : plan.pod_deletes) deletes[d.name] = d.grace_period_seconds;
  EXPECT_EQ(deletes.size(), 3u);
  EXPECT_EQ(deletes.at("job-worker-0"), 0);
  EXPECT_EQ(deletes.at("job-worker-1"), 0);
  EXPECT_EQ(deletes.count("job-worker-2"), 0u);  // already Terminating on a healthy node
  EXPECT_EQ(deletes.at("job-worker-3"), std::nullopt);
  for (const PodDeletion& d : plan.pod_deletes) {
    EXPECT_EQ(d.uid, "pod-uid-worker" + d.name.substr(d.name.size() - 1));
  }

  // A disruption: no backoff, no failure counted, the streak untouched.
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.restarts.disruptions, 1);
  EXPECT_EQ(plan.status.restarts.failures, 0);
  EXPECT_EQ(plan.status.restarts.consecutive, 0);
  EXPECT_EQ(plan.status.last_restart->backoff_seconds, 0);
  EXPECT_EQ(plan.status.last_restart->reason, "NodeLeaseExpired");
  EXPECT_EQ(plan.status.last_restart->nodes, std::vector<std::string>{"node-lost"});
  ASSERT_EQ(plan.status.excluded_nodes.size(), 1u);
  EXPECT_EQ(plan.status.excluded_nodes[0].name, "node-lost");
  EXPECT_EQ(plan.status.excluded_nodes[0].reason, "NodeLeaseExpired");
  EXPECT_EQ(plan.status.excluded_nodes[0].until, T0() + seconds(300));
  EXPECT_EQ(Reasons(plan), std::vector<std::string>{"NodeLeaseExpired"});
  EXPECT_NE(plan.events[0].message.find("excluding node node-lost"), std::string::npos);
  EXPECT_EQ(plan.events[0].message.find("backoff"), std::string::npos);
  EXPECT_FALSE(plan.requeue_after.has_value());  // nothing to wait for
  // Node losses are timed by the detector, not here.
  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_FALSE(plan.restart->detection_delay_seconds.has_value());
}

// The taint-eviction controller deletes a pod that does not tolerate its node's NoExecute taint by
// name; a successor created under that name meanwhile was deleted in its place. So the restart
// leaves such a pod to that controller (until its delete was accepted, or 10 s), and the new
// attempt's pods wait for it like for any old pod.
TEST(RestartPlanTest, APodTheTaintManagerEvictsIsLeftToItUntilItsDeleteIsAccepted) {
  NodeVerdict tainted = LostNode("NodeTainted", "node node-bad: tainted hw=xid:NoExecute");
  tainted.no_execute_taints = {kube::Taint{"hw", "xid", "NoExecute", ""}};
  const kube::Pod w0 = Pod("worker", 0, "Running", "node-bad");
  const kube::Pod w1 = Pod("worker", 1, "Running", "node-ok");
  CachedJob job = Started();

  // The decision: worker-1 is deleted, worker-0 left to the taint manager; a requeue for its
  // wait (10 s, plus one for lastRestart.time's truncation).
  Plan plan = RunPass(job, {w0, w1}, T0(), {{"node-bad", tainted}});
  ASSERT_EQ(plan.status.attempt, 1);
  ASSERT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_EQ(plan.pod_deletes[0].name, "job-worker-1");
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(plan.requeue_after->count(), 11);
  job.job.status = plan.status;

  // Still untouched 5 s later: nothing deleted, nothing created.
  plan = RunPass(job, {w0}, T0() + seconds(5), {{"node-bad", tainted}});
  EXPECT_TRUE(plan.pod_deletes.empty());
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_EQ(plan.status.reason, "WaitingForOldPods");

  // The taint manager's delete was accepted: the operator forces it (the node is lost).
  kube::Pod evicted = Terminating(w0);
  evicted.conditions.push_back(
      kube::Condition{"DisruptionTarget", "True", "DeletionByTaintManager", "", "", ""});
  plan = RunPass(job, {evicted}, T0() + seconds(6), {{"node-bad", tainted}});
  ASSERT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_EQ(plan.pod_deletes[0].grace_period_seconds, 0);
  EXPECT_TRUE(plan.pod_creates.empty());

  // No taint manager acted within 10 s: the operator deletes it itself.
  plan = RunPass(job, {w0}, T0() + seconds(10), {{"node-bad", tainted}});
  ASSERT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_EQ(plan.pod_deletes[0].grace_period_seconds, 0);
}

// The node's taint not in the cache yet, the loss known from the taint manager's mark on the pod
// (TaintEvictionVerdict, no taints in the verdict): the marked pod is still that controller's to
// delete, and the restart names the node and excludes it.
TEST(RestartPlanTest, APodMarkedByTheTaintManagerIsLeftToItWhenTheTaintIsNotCachedYet) {
  kube::Pod w0 = Pod("worker", 0, "Running", "node-bad");
  w0.conditions.push_back(kube::Condition{"DisruptionTarget", "True", "DeletionByTaintManager",
                                          "Taint manager: deleting due to NoExecute taint", "",
                                          ""});
  const kube::Pod w1 = Pod("worker", 1, "Running", "node-ok");
  const NodeVerdict from_mark = TaintEvictionVerdict(w0);
  ASSERT_TRUE(from_mark.lost);
  const Plan plan = RunPass(Started(), {w0, w1}, T0(), {{"node-bad", from_mark}});
  ASSERT_EQ(plan.status.attempt, 1);
  ASSERT_TRUE(plan.status.last_restart.has_value());
  EXPECT_EQ(plan.status.last_restart->reason, "NodeTainted");
  ASSERT_EQ(plan.status.excluded_nodes.size(), 1u);
  EXPECT_EQ(plan.status.excluded_nodes[0].name, "node-bad");
  ASSERT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_EQ(plan.pod_deletes[0].name, "job-worker-1");
}

TEST(RestartPlanTest, APodThatToleratesTheTaintForAWhileIsDeletedAtOnce) {
  NodeVerdict tainted = LostNode("NodeTainted", "node node-bad: tainted hw=xid:NoExecute");
  tainted.no_execute_taints = {kube::Taint{"hw", "xid", "NoExecute", ""}};
  struct Case {
    const char* name;
    std::vector<kube::Toleration> tolerations;
    bool left_to_taint_manager;
  };
  const std::vector<Case> cases = {
      {"none", {}, true},
      {"another key", {{"other", "Exists", "", "NoExecute", std::nullopt}}, true},
      {"another value", {{"hw", "Equal", "ecc", "NoExecute", std::nullopt}}, true},
      {"for 0 s", {{"hw", "Exists", "", "NoExecute", 0}}, true},
      {"for 300 s", {{"hw", "Exists", "", "NoExecute", 300}}, false},
      {"forever", {{"hw", "Equal", "xid", "", std::nullopt}}, false},
      {"every taint", {{"", "Exists", "", "", std::nullopt}}, false},
  };
  for (const Case& c : cases) {
    kube::Pod w0 = Pod("worker", 0, "Running", "node-bad");
    w0.tolerations = c.tolerations;
    const Plan plan = RunPass(Started(), {w0}, T0(), {{"node-bad", tainted}});
    EXPECT_EQ(plan.pod_deletes.empty(), c.left_to_taint_manager) << c.name;
  }
}

TEST(RestartPlanTest, UnsettledCachesDecideTheRestartButDeleteNothing) {
  const Plan plan = RunPass(Started(), {FailedPod("worker", 0, 1), Pod("worker", 1, "Running")},
                            T0(), {}, /*settled=*/false);
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_TRUE(plan.pod_deletes.empty());
  EXPECT_TRUE(plan.pod_creates.empty());
}

TEST(RestartPlanTest, DisruptionKeepsTheFailureStreakAndWaitsNoBackoff) {
  CachedJob job = Started();
  job.job.status.restarts = {2, 0, 2};
  const Plan plan = RunPass(job, {Pod("worker", 0, "Failed"), Pod("worker", 1, "Running")}, T0(),
                            {{"node-1", LostNode("NodeNotReady", "node node-1: Ready=False")}});
  EXPECT_EQ(plan.status.restarts.consecutive, 2);
  EXPECT_EQ(plan.status.restarts.failures, 2);
  EXPECT_EQ(plan.status.restarts.disruptions, 1);
  EXPECT_EQ(plan.status.last_restart->backoff_seconds, 0);
}

// Failure after failure: the waits double from 10 s to the 300 s cap.
TEST(RestartPlanTest, ConsecutiveFailuresBackOffExponentially) {
  CachedJob job = Started();
  job.job.spec.failure_policy.max_restarts = 100;
  api::Time now = T0();
  std::vector<int32_t> waits;
  for (int i = 0; i < 7; ++i) {
    const int32_t attempt = job.job.status.attempt;
    const Plan plan = RunPass(job, {InAttempt(FailedPod("worker", 0, 1), attempt)}, now);
    ASSERT_EQ(plan.status.attempt, attempt + 1);
    waits.push_back(plan.status.last_restart->backoff_seconds);
    ASSERT_TRUE(plan.requeue_after.has_value());
    EXPECT_EQ(plan.requeue_after->count(), plan.status.last_restart->backoff_seconds);
    job.job.status = plan.status;
    now += seconds(1000);
  }
  EXPECT_EQ(waits, (std::vector<int32_t>{10, 20, 40, 80, 160, 300, 300}));
  EXPECT_EQ(job.job.status.restarts.failures, 7);
}

// The restart counts a pass adds to hold at INT32_MAX (the CRD's maximum) instead of wrapping
// negative: status.restarts.consecutive has no budget of its own (restarts that ignore
// maxRestarts still add to it) and a status may hold any value the CRD allows. disruptions is
// also held below maxDisruptions by the budget; its case checks the add itself.
TEST(RestartPlanTest, RestartCountsSaturateAtInt32MaxTable) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  struct Case {
    const char* name;
    bool disruption;
    int32_t before;
    int32_t after;
  };
  const Case cases[] = {
      {"a failure adds one to consecutive", false, 5, 6},
      {"consecutive reaches the maximum", false, kMax - 1, kMax},
      {"consecutive at the maximum stays there", false, kMax, kMax},
      {"a disruption adds one", true, 5, 6},
      {"disruptions reach the maximum", true, kMax - 1, kMax},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CachedJob job = Started();
    job.job.spec.failure_policy.max_restarts = 100;
    job.job.spec.failure_policy.max_disruptions = kMax;
    if (c.disruption) {
      job.job.status.restarts.disruptions = c.before;
      const Plan plan = RunPass(job, {Pod("worker", 0, "Failed"), Pod("worker", 1, "Running")},
                                T0(), {{"node-1", LostNode("NodeNotReady", "node node-1: gone")}});
      ASSERT_EQ(plan.status.attempt, 1);
      EXPECT_EQ(plan.status.restarts.disruptions, c.after);
    } else {
      job.job.status.restarts.consecutive = c.before;
      const Plan plan = RunPass(job, {InAttempt(FailedPod("worker", 0, 1), 0)}, T0());
      ASSERT_EQ(plan.status.attempt, 1);
      EXPECT_EQ(plan.status.restarts.consecutive, c.after);
      EXPECT_EQ(plan.status.last_restart->backoff_seconds, 300);  // the cap, whatever the streak
    }
  }
}

// The whole restart, pass by pass, from the failure to the recovered gang.
TEST(RestartPlanTest, FromFailureToRecoveredGang) {
  CachedJob job = Started();
  job.job.status.conditions.push_back(
      api::Condition{"Running", api::ConditionStatus::kTrue, 1, T0(), "AllPodsRunning", ""});
  const kube::Pod w0 = Pod("worker", 0, "Running");
  const kube::Pod w1 = FailedPod("worker", 1, 1);

  // Pass 1 (t=100): the decision.
  const api::Time t = T0() + seconds(100);
  Plan plan = RunPass(job, {w0, w1}, t);
  ASSERT_EQ(plan.status.attempt, 1);
  ASSERT_EQ(plan.pod_deletes.size(), 2u);
  job.job.status = plan.status;

  // Pass 2: the old pods are Terminating (label attempt 0): nothing more to delete, no creates.
  plan = RunPass(job, {Terminating(w0), Terminating(w1)}, t + seconds(1));
  EXPECT_TRUE(plan.pod_deletes.empty());
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_EQ(plan.status.state, api::JobState::kRestarting);
  EXPECT_EQ(plan.status.reason, "WaitingForOldPods");
  EXPECT_NE(plan.status.message.find("2 pods of attempt 0"), std::string::npos);
  EXPECT_TRUE(plan.events.empty());
  job.job.status = plan.status;

  // Pass 2b: an old pod the cache still shows as not being deleted is deleted again.
  plan = RunPass(job, {w0}, t + seconds(1));
  EXPECT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_TRUE(plan.pod_creates.empty());

  // Pass 3 (t+4): the old pods are gone, the 10 s backoff is not over.
  plan = RunPass(job, {}, t + seconds(4));
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_EQ(plan.status.state, api::JobState::kRestarting);
  EXPECT_EQ(plan.status.reason, "BackingOff");
  ASSERT_TRUE(plan.requeue_after.has_value());
  // 6 s left, plus the second lastRestart.time may have lost to truncation, plus one.
  EXPECT_EQ(plan.requeue_after->count(), 8);
  job.job.status = plan.status;

  // Pass 4 (t+11): the new attempt's pods, labelled 1 (at least the full 10 s after the
  // decision, whose time was stored truncated to the second).
  plan = RunPass(job, {}, t + seconds(10));
  EXPECT_TRUE(plan.pod_creates.empty());
  plan = RunPass(job, {}, t + seconds(11));
  ASSERT_EQ(plan.pod_creates.size(), 2u);
  for (const nlohmann::json& pod : plan.pod_creates) EXPECT_EQ(CreatedAttempt(pod), "1");
  EXPECT_EQ(plan.status.state, api::JobState::kRestarting);
  EXPECT_EQ(plan.status.reason, "CreatingPods");
  job.job.status = plan.status;

  // Pass 5: created but not yet running: still Restarting.
  std::vector<kube::Pod> next = {InAttempt(Pod("worker", 0, "Pending"), 1),
                                 InAttempt(Pod("worker", 1, "Pending"), 1)};
  plan = RunPass(job, next, t + seconds(20));
  EXPECT_EQ(plan.status.state, api::JobState::kRestarting);
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_FALSE(plan.recovery_seconds.has_value());
  job.job.status = plan.status;

  // Pass 6 (t+30): running: Recovered, with the time since the decision.
  next = {InAttempt(Pod("worker", 0, "Running"), 1), InAttempt(Pod("worker", 1, "Running"), 1)};
  plan = RunPass(job, next, t + seconds(30));
  EXPECT_EQ(plan.status.state, api::JobState::kRunning);
  EXPECT_EQ(Cond(plan, api::kConditionRestarting).status, api::ConditionStatus::kFalse);
  EXPECT_EQ(Cond(plan, api::kConditionRestarting).reason, "Recovered");
  EXPECT_EQ(Reasons(plan), std::vector<std::string>{"Recovered"});
  EXPECT_EQ(plan.events[0].type, "Normal");
  EXPECT_NE(plan.events[0].message.find("attempt 1 is running 30s after the PodFailed restart"),
            std::string::npos)
      << plan.events[0].message;
  ASSERT_TRUE(plan.recovery_seconds.has_value());
  EXPECT_DOUBLE_EQ(*plan.recovery_seconds, 30.0);
  EXPECT_FALSE(plan.became_running);  // time-to-running is attempt 0's only
  // The streak resets only after resetAfterSeconds (600) of running.
  EXPECT_EQ(plan.status.restarts.consecutive, 1);
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(plan.requeue_after->count(), 600);
  job.job.status = plan.status;

  // Pass 7: still running a little later: no second Recovered event.
  plan = RunPass(job, next, t + seconds(40));
  EXPECT_TRUE(plan.events.empty());
  EXPECT_FALSE(plan.recovery_seconds.has_value());
  EXPECT_EQ(plan.status.restarts.consecutive, 1);
  EXPECT_EQ(plan.requeue_after->count(), 590);
  job.job.status = plan.status;

  // Pass 8: 600 s of healthy running: the backoff streak resets.
  plan = RunPass(job, next, t + seconds(630));
  EXPECT_EQ(plan.status.restarts.consecutive, 0);
  EXPECT_EQ(plan.status.restarts.failures, 1);  // the budget is not given back
}

TEST(RestartPlanTest, PodsOfAnOlderAttemptAreNeverCountedInTheCurrentOne) {
  CachedJob job = Started();
  job.job.status.attempt = 1;
  job.job.status.last_restart = api::LastRestart{T0(), "PodFailed", "m", 1, 0,
                                                 api::RestartMode::kRecreate, {}};
  // A straggler of attempt 0 that failed: not a failure of attempt 1, just deleted.
  const Plan plan =
      RunPass(job, {FailedPod("worker", 0, 1), InAttempt(Pod("worker", 1, "Running"), 1)},
              T0() + seconds(5));
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.restarts.failures, 0);
  ASSERT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_EQ(plan.pod_deletes[0].name, "job-worker-0");
  EXPECT_TRUE(plan.pod_creates.empty());  // worker 0's name is still held
  EXPECT_EQ(plan.status.reason, "WaitingForOldPods");
}

TEST(RestartPlanTest, ExclusionsArePrunedAfterTheirCoolDown) {
  CachedJob job = Started();
  job.job.status.excluded_nodes = {{"node-a", "NodeNotReady", T0() + seconds(100)},
                                   {"node-b", "NodeDeleted", T0() + seconds(400)}};
  const std::vector<kube::Pod> pods = {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")};
  Plan plan = RunPass(job, pods, T0() + seconds(99));
  EXPECT_EQ(plan.status.excluded_nodes.size(), 2u);
  plan = RunPass(job, pods, T0() + seconds(100));
  ASSERT_EQ(plan.status.excluded_nodes.size(), 1u);
  EXPECT_EQ(plan.status.excluded_nodes[0].name, "node-b");
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(plan.requeue_after->count(), 301);  // at node-b's expiry
}

TEST(RestartPlanTest, ALostNodeAlreadyExcludedIsExtendedNotDuplicated) {
  CachedJob job = Started();
  job.job.status.excluded_nodes = {{"node-1", "NodeNotReady", T0() + seconds(50)}};
  const Plan plan = RunPass(job, {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, T0(),
                            {{"node-1", LostNode("NodeDeleted", "node node-1: deleted")}});
  ASSERT_EQ(plan.status.excluded_nodes.size(), 1u);
  EXPECT_EQ(plan.status.excluded_nodes[0].reason, "NodeDeleted");
  EXPECT_EQ(plan.status.excluded_nodes[0].until, T0() + seconds(300));
}

TEST(RestartPlanTest, BudgetUsedUpFailsTheJobWithoutANewAttempt) {
  CachedJob job = Started();
  job.job.spec.failure_policy.max_restarts = 0;
  const Plan plan = RunPass(job, {FailedPod("worker", 0, 1), Pod("worker", 1, "Running")}, T0());
  EXPECT_EQ(plan.outcome, Outcome::kFailed);
  EXPECT_EQ(plan.status.state, api::JobState::kFailed);
  EXPECT_EQ(plan.status.reason, "MaxRestartsExceeded");
  EXPECT_NE(plan.status.message.find("exited with code 1"), std::string::npos);
  EXPECT_EQ(plan.status.attempt, 0);
  EXPECT_FALSE(plan.restart.has_value());
  EXPECT_EQ(Reasons(plan), std::vector<std::string>{"MaxRestartsExceeded"});
}

// A job that fails because of a lost node (its disruption budget is used up) still has pods on
// that node: only a force delete (grace 0) removes them, or they stay Terminating for good.
TEST(RestartPlanTest, AJobFailedByALostNodeForceDeletesThePodsOnIt) {
  CachedJob job = Started();
  job.job.spec.failure_policy.max_disruptions = 0;
  const Plan plan =
      RunPass(job, {Pod("worker", 0, "Running", "node-lost"), Pod("worker", 1, "Running")}, T0(),
              {{"node-lost", LostNode("NodeDeleted", "node node-lost: deleted")}});
  EXPECT_EQ(plan.outcome, Outcome::kFailed);
  EXPECT_EQ(plan.status.reason, "MaxDisruptionsExceeded");
  std::map<std::string, std::optional<int64_t>> deletes;
  for (const PodDeletion& d : plan.pod_deletes) deletes[d.name] = d.grace_period_seconds;
  ASSERT_EQ(deletes.size(), 2u);  // cleanPodPolicy Running
  EXPECT_EQ(deletes.at("job-worker-0"), 0);
  EXPECT_EQ(deletes.at("job-worker-1"), std::nullopt);
}

}  // namespace
}  // namespace lockstep::controller
