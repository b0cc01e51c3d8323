// Startup failures (issue 45): which waiting reasons count, which pod and container the message
// names and how it is bounded (startup_policy.h), the timer (timers.h CheckStartupTimeout), the
// failure it becomes (failure_policy.h StartupTimeoutFailure), and what a pass makes of them
// (plan.cc step StartupFailing: the condition, status.reason/message, the attempt's end).
#include "operator/controller/startup_policy.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/conditions.h"
#include "operator/controller/failure_policy.h"
#include "operator/controller/plan.h"
#include "operator/controller/timers.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;
using testing::FailedPod;
using testing::Job;
using testing::Pod;
using testing::T0;

kube::ContainerStatus Waiting(const std::string& name, const std::string& reason,
                              const std::string& message = "") {
  kube::ContainerStatus c;
  c.name = name;
  c.state = "waiting";
  c.reason = reason;
  c.message = message;
  return c;
}

// A bound, Pending worker whose trainer waits with `reason`.
kube::Pod WaitingPod(int index, const std::string& reason, const std::string& message = "m") {
  kube::Pod p = Pod("worker", index, "Pending");
  p.container_statuses.push_back(Waiting("trainer", reason, message));
  return p;
}

api::Condition StartupCondition(const std::string& reason, const std::string& message,
                                api::Time since) {
  api::Condition c;
  c.type = std::string(api::kConditionStartupFailing);
  c.status = api::ConditionStatus::kTrue;
  c.reason = reason;
  c.message = message;
  c.last_transition_time = since;
  return c;
}

// --- which waiting reasons count ---

TEST(StartupPolicyTest, TheReasonsThatMeanCannotStart) {
  for (const char* reason :
       {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError",
        "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}) {
    EXPECT_TRUE(IsStartupFailureReason(reason)) << reason;
  }
  // On their way up, or not a waiting reason of the kubelet's at all.
  for (const char* reason :
       {"", "ContainerCreating", "PodInitializing", "Completed", "Error", "imagepullbackoff"}) {
    EXPECT_FALSE(IsStartupFailureReason(reason)) << reason;
  }
}

// --- which pod and container, and the message ---

struct FindCase {
  std::string name;
  std::vector<kube::Pod> pods;
  std::optional<api::Condition> previous;
  std::optional<StartupFailure> want;
};

std::vector<FindCase> FindCases() {
  kube::Pod creating = Pod("worker", 0, "Pending");
  creating.container_statuses.push_back(Waiting("trainer", "ContainerCreating"));
  kube::Pod failed = FailedPod("worker", 0, 1);
  failed.container_statuses.push_back(Waiting("sidecar", "ImagePullBackOff"));
  kube::Pod deleting = testing::Terminating(WaitingPod(0, "ErrImagePull"));
  kube::Pod init = WaitingPod(0, "ErrImagePull", "trainer image");
  init.init_container_statuses.push_back(
      Waiting("copy-launcher", "CreateContainerConfigError", "secret \"s\" not found"));
  // A Running pod: its init containers ran, so a waiting one is a sidecar that started once.
  kube::Pod sidecar_loop = Pod("worker", 0, "Running");
  sidecar_loop.init_container_statuses.push_back(
      Waiting("log-shipper", "CrashLoopBackOff", "back-off 40s"));
  // ... but a main container that never started in a Running pod counts.
  kube::Pod second_container = Pod("worker", 0, "Running");
  kube::ContainerStatus running;
  running.name = "trainer";
  running.state = "running";
  second_container.container_statuses = {running, Waiting("metrics", "InvalidImageName", "bad")};
  // A crash loop between two waits: the sidecar runs again, restartCount 2.
  kube::Pod between_waits = Pod("worker", 1, "Pending");
  kube::ContainerStatus rerun = running;
  rerun.name = "proxy";
  rerun.restart_count = 2;
  between_waits.init_container_statuses.push_back(rerun);
  const api::Condition looping = StartupCondition(
      "CrashLoopBackOff", "job-worker-1: CrashLoopBackOff: back-off 20s (container proxy)", T0());
  api::Condition looping_false = looping;
  looping_false.status = api::ConditionStatus::kFalse;

  return {
      {"no pods", {}, std::nullopt, std::nullopt},
      {"pulling is on its way up", {creating}, std::nullopt, std::nullopt},
      {"an image pull error",
       {Pod("worker", 0, "Running"), WaitingPod(1, "ErrImagePull", "pull access denied")},
       std::nullopt,
       StartupFailure{"ErrImagePull",
                      "job-worker-1: ErrImagePull: pull access denied (container trainer)"}},
      {"no kubelet message",
       {WaitingPod(0, "InvalidImageName", "")},
       std::nullopt,
       StartupFailure{"InvalidImageName", "job-worker-0: InvalidImageName (container trainer)"}},
      {"a finished pod does not count", {failed}, std::nullopt, std::nullopt},
      {"a pod being deleted does not count", {deleting}, std::nullopt, std::nullopt},
      {"an init container blocks the rest: named first",
       {init},
       std::nullopt,
       StartupFailure{"CreateContainerConfigError",
                      "job-worker-0: CreateContainerConfigError: secret \"s\" not found "
                      "(container copy-launcher)"}},
      {"a sidecar crash-looping in a Running pod is not a startup failure",
       {sidecar_loop},
       std::nullopt,
       std::nullopt},
      {"a main container that never started in a Running pod is",
       {second_container},
       std::nullopt,
       StartupFailure{"InvalidImageName",
                      "job-worker-0: InvalidImageName: bad (container metrics)"}},
      {"worker-2 before worker-10, and the others counted",
       {WaitingPod(10, "ImagePullBackOff", "a"), WaitingPod(2, "ErrImagePull", "b")},
       std::nullopt,
       StartupFailure{"ErrImagePull",
                      "job-worker-2: ErrImagePull: b (container trainer); 1 more pod failing "
                      "to start"}},
      {"three failing",
       {WaitingPod(3, "ImagePullBackOff", "c"), WaitingPod(1, "ImagePullBackOff", "a"),
        WaitingPod(2, "ImagePullBackOff", "b")},
       std::nullopt,
       StartupFailure{"ImagePullBackOff",
                      "job-worker-1: ImagePullBackOff: a (container trainer); 2 more pods "
                      "failing to start"}},
      {"a crash loop between waits keeps the condition as it was",
       {between_waits},
       looping,
       StartupFailure{looping.reason, looping.message}},
      {"a restart count alone never starts one", {between_waits}, std::nullopt, std::nullopt},
      {"nor keeps one that is not True", {between_waits}, looping_false, std::nullopt},
      {"a crash loop that ran to Running ends it",
       {Pod("worker", 1, "Running")},
       looping,
       std::nullopt},
  };
}

class FindStartupFailureTest : public ::testing::TestWithParam<FindCase> {};

TEST_P(FindStartupFailureTest, NamesThePodReasonAndMessage) {
  const FindCase& tc = GetParam();
  const std::optional<StartupFailure> got =
      FindStartupFailure(tc.pods, tc.previous ? &*tc.previous : nullptr);
  ASSERT_EQ(got.has_value(), tc.want.has_value()) << (got ? got->message : "nullopt");
  if (got) {
    EXPECT_EQ(got->reason, tc.want->reason);
    EXPECT_EQ(got->message, tc.want->message);
  }
}

std::string CaseName(const ::testing::TestParamInfo<FindCase>& p) {
  std::string out;
  for (char ch : p.param.name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

INSTANTIATE_TEST_SUITE_P(Table, FindStartupFailureTest, ::testing::ValuesIn(FindCases()),
                         CaseName);

// The kubelet's message is the cluster's text: one line, cut at kMaxWaitingMessageBytes; and the
// whole message is capped whatever the names in the pod's status are.
TEST(StartupPolicyTest, TheMessageIsBoundedAndOnOneLine) {
  const std::string huge = "line one\nline two\t" + std::string(10'000, 'x');
  std::optional<StartupFailure> got =
      FindStartupFailure({WaitingPod(0, "ErrImagePull", huge)}, nullptr);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->message.find_first_of("\n\t"), std::string::npos) << got->message;
  EXPECT_NE(got->message.find("line one line two"), std::string::npos);
  const std::string prefix = "job-worker-0: ErrImagePull: ";
  const std::string suffix = "... (container trainer)";
  ASSERT_EQ(got->message.substr(0, prefix.size()), prefix);
  EXPECT_EQ(got->message.size(), prefix.size() + kMaxWaitingMessageBytes + suffix.size());
  EXPECT_EQ(got->message.substr(got->message.size() - suffix.size()), suffix);

  kube::Pod odd = WaitingPod(0, "ErrImagePull", huge);
  odd.container_statuses[0].name = std::string(5'000, 'c');  // never validated for status
  got = FindStartupFailure({odd}, nullptr);
  ASSERT_TRUE(got);
  EXPECT_LE(got->message.size(), kMaxStartupMessageBytes + 3);
}

// --- the timer and the failure it becomes ---

TEST(StartupPolicyTest, TheTimerRunsFromTheConditionsTransition) {
  api::RunPolicy run;
  run.startup_timeout_seconds = 600;
  EXPECT_EQ(run.startup_timeout_seconds, api::kDefaultStartupTimeoutSeconds);
  std::vector<api::Condition> conditions;
  EXPECT_FALSE(CheckStartupTimeout(run, conditions, T0()));
  conditions.push_back(StartupCondition("ErrImagePull", "m", T0()));
  conditions[0].status = api::ConditionStatus::kFalse;
  EXPECT_FALSE(CheckStartupTimeout(run, conditions, T0() + seconds(900))) << "only while True";
  conditions[0].status = api::ConditionStatus::kTrue;
  std::optional<TimerCheck> t =
      CheckStartupTimeout(run, conditions, T0() + std::chrono::milliseconds(599'500));
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->expired);
  EXPECT_EQ(t->remaining, seconds(1));  // rounded up: the requeue lands at or after the expiry
  t = CheckStartupTimeout(run, conditions, T0() + seconds(600));
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->expired);
}

TEST(StartupPolicyTest, TheTimeoutIsTheJobsFailureWithinMaxRestarts) {
  CachedJob c = Job();
  c.job.spec.run_policy.startup_timeout_seconds = 30;
  const api::Condition cond = StartupCondition(
      "ImagePullBackOff", "job-worker-1: ImagePullBackOff: back-off (container trainer)", T0());
  FailureDecision d = StartupTimeoutFailure(c.job, cond);
  EXPECT_EQ(d.action, FailureAction::kRestart);
  EXPECT_EQ(d.kind, FailureKind::kFailure);
  EXPECT_TRUE(d.counts);
  EXPECT_EQ(d.reason, "ImagePullBackOff");
  EXPECT_EQ(d.message, cond.message +
                           "; failing to start for 30s (spec.runPolicy.startupTimeoutSeconds)");
  EXPECT_EQ(d.failed_at, T0() + seconds(30));

  c.job.status.restarts.failures = c.job.spec.failure_policy.max_restarts;
  d = StartupTimeoutFailure(c.job, cond);
  EXPECT_EQ(d.action, FailureAction::kFailJob);
  EXPECT_EQ(d.reason, "MaxRestartsExceeded");
  EXPECT_NE(d.message.find("ImagePullBackOff"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("maxRestarts (3) used up"), std::string::npos) << d.message;
}

// --- what a pass makes of it ---

Plan Pass(const CachedJob& job, std::vector<kube::Pod> pods, api::Time now) {
  Observed observed;
  observed.pods = std::move(pods);
  observed.service_exists = observed.network_policy_exists = true;
  const PlanOptions options{"launcher:test", seconds(300)};
  return ComputePlan(job, observed, now, true, options);
}

const api::Condition* Startup(const Plan& plan) {
  return api::FindCondition(plan.status.conditions, api::kConditionStartupFailing);
}

TEST(StartupPassTest, TheStateMessageAndTheConditionNameThePodAtOnce) {
  CachedJob job = Job();
  job.job.status.start_time = T0();
  const Plan plan =
      Pass(job, {Pod("worker", 0, "Running"), WaitingPod(1, "ErrImagePull", "not found")}, T0());
  EXPECT_EQ(plan.decided_by, "Progress");
  const std::string message = "job-worker-1: ErrImagePull: not found (container trainer)";
  ASSERT_NE(Startup(plan), nullptr);
  EXPECT_EQ(Startup(plan)->status, api::ConditionStatus::kTrue);
  EXPECT_EQ(Startup(plan)->reason, "ErrImagePull");
  EXPECT_EQ(Startup(plan)->message, message);
  EXPECT_EQ(plan.status.state, api::JobState::kScheduling);
  EXPECT_EQ(plan.status.reason, "ErrImagePull");
  EXPECT_EQ(plan.status.message, message);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "StartupFailing");
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.requeue_after, seconds(api::kDefaultStartupTimeoutSeconds));

  // The next pass, the same failure: no second event, the transition time kept.
  CachedJob again = job;
  again.job.status = plan.status;
  const Plan next = Pass(again, {Pod("worker", 0, "Running"),
                                 WaitingPod(1, "ImagePullBackOff", "back-off")},
                         T0() + seconds(20));
  ASSERT_NE(Startup(next), nullptr);
  EXPECT_EQ(Startup(next)->reason, "ImagePullBackOff");
  EXPECT_EQ(Startup(next)->last_transition_time, Startup(plan)->last_transition_time);
  EXPECT_TRUE(next.events.empty());
  EXPECT_EQ(next.requeue_after, seconds(api::kDefaultStartupTimeoutSeconds - 20));
}

TEST(StartupPassTest, TheGangSchedulersWordsStayWhilePodsAreUnbound) {
  CachedJob job = Job();
  api::Condition sched;
  sched.type = std::string(api::kConditionScheduled);
  sched.status = api::ConditionStatus::kFalse;
  sched.reason = "Unschedulable";
  sched.message = "needs 16 nvidia.com/gpu in one block; largest free: 12";
  job.job.status.conditions.push_back(sched);
  const Plan plan =
      Pass(job, {WaitingPod(0, "ErrImagePull"), Pod("worker", 1, "Pending", "")}, T0());
  EXPECT_EQ(plan.status.reason, "Unschedulable");
  EXPECT_EQ(plan.status.message, sched.message);
  ASSERT_NE(Startup(plan), nullptr) << "the condition says it all the same";
}

struct TimeoutCase {
  std::string name;
  std::function<void(CachedJob&)> edit;
  std::vector<kube::Pod> pods;
  std::string decided_by;
  std::string reason;  // lastRestart's or the Failed condition's
  bool condition_left;
};

std::vector<TimeoutCase> TimeoutCases() {
  auto failing_since_t0 = [](CachedJob& c) {
    c.job.status.start_time = T0();
    c.job.spec.run_policy.startup_timeout_seconds = 60;
    c.job.status.conditions.push_back(StartupCondition("ImagePullBackOff", "old words", T0()));
  };
  const kube::Pod pulling = WaitingPod(1, "ImagePullBackOff", "back-off");
  return {
      {"within maxRestarts: the next attempt, and its pods start their own timer",
       failing_since_t0, {Pod("worker", 0, "Running"), pulling}, "FailureRestart",
       "ImagePullBackOff", false},
      {"maxRestarts used up: the job fails, the condition says why",
       [failing_since_t0](CachedJob& c) {
         failing_since_t0(c);
         c.job.spec.failure_policy.max_restarts = 0;
       },
       {Pod("worker", 0, "Running"), pulling}, "FailJob", "MaxRestartsExceeded", true},
      {"a pod's own failure explains the pass first",
       failing_since_t0, {FailedPod("worker", 0, 1), pulling}, "FailureRestart", "PodFailed",
       false},
  };
}

class StartupTimeoutPassTest : public ::testing::TestWithParam<TimeoutCase> {};

TEST_P(StartupTimeoutPassTest, EndsTheAttemptPerTheFailurePolicy) {
  const TimeoutCase& tc = GetParam();
  CachedJob job = Job();
  tc.edit(job);
  const Plan plan = Pass(job, tc.pods, T0() + seconds(60));
  EXPECT_EQ(plan.decided_by, tc.decided_by);
  if (tc.decided_by == "FailJob") {
    const api::Condition* failed = api::FindCondition(plan.status.conditions,
                                                      api::kConditionFailed);
    ASSERT_NE(failed, nullptr);
    EXPECT_EQ(failed->reason, tc.reason);
    EXPECT_NE(failed->message.find("job-worker-1: ImagePullBackOff"), std::string::npos)
        << failed->message;
  } else {
    ASSERT_TRUE(plan.status.last_restart);
    EXPECT_EQ(plan.status.last_restart->reason, tc.reason);
    EXPECT_EQ(plan.status.attempt, 1);
    EXPECT_EQ(plan.status.restarts.failures, 1);
  }
  EXPECT_EQ(Startup(plan) != nullptr, tc.condition_left);
}

INSTANTIATE_TEST_SUITE_P(Table, StartupTimeoutPassTest, ::testing::ValuesIn(TimeoutCases()),
                         [](const ::testing::TestParamInfo<TimeoutCase>& p) {
                           std::string out;
                           for (char ch : p.param.name) {
                             out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           }
                           return out;
                         });

TEST(StartupPassTest, NothingFailingRemovesTheCondition) {
  CachedJob job = Job();
  job.job.status.conditions.push_back(StartupCondition("ErrImagePull", "m", T0()));
  EXPECT_EQ(Startup(Pass(job, {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, T0())),
            nullptr);
  // A suspended job has no pod starting: a resume starts the timer afresh.
  job.job.spec.run_policy.suspend = true;
  EXPECT_EQ(Startup(Pass(job, {WaitingPod(0, "ErrImagePull")}, T0())), nullptr);
}

}  // namespace
}  // namespace lockstep::controller
