// In-place restarts through ComputePlan (inplace_plan.h): what the launchers report is recorded
// once, a failed pod's restartCount is not counted twice, the restart-request annotation becomes
// a Restart to the launchers (or a Recreate restart), and a pending request completes or falls
// back after failurePolicy.inPlaceTimeoutSeconds.
#include "operator/controller/inplace_plan.h"

#include <gtest/gtest.h>

#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;
using testing::FailedPod;
using testing::Job;
using testing::Pod;
using testing::T0;

std::vector<kube::Pod> RunningPods() {
  std::vector<kube::Pod> pods = {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")};
  pods[0].pod_ip = "10.0.0.10";
  pods[1].pod_ip = "10.0.0.11";
  return pods;
}

// A 2-worker job of attempt 0 whose gang runs (its Running condition already written).
CachedJob RunningJob() {
  CachedJob job = Job(2);
  job.job.status.start_time = T0();
  Observed observed{RunningPods(), true, {}};
  job.job.status =
      ComputePlan(job, observed, T0(), true, PlanOptions{"launcher:test", seconds(300)}).status;
  return job;
}

LauncherObservation Answer(uint32_t round, bool running, uint32_t failures = 0,
                           uint32_t requested = 0) {
  LauncherObservation obs;
  obs.pod_uid = "pod-uid-worker0";
  obs.answered = true;
  obs.status.round = round;
  obs.status.complete = running;
  obs.status.running = running;
  obs.status.members = 2;
  obs.status.failure_restarts = failures;
  obs.status.requested_restarts = requested;
  return obs;
}

Plan RunPass(const CachedJob& job, const std::vector<kube::Pod>& pods, api::Time now,
             std::optional<LauncherObservation> launchers) {
  Observed observed{pods, true, {}, std::move(launchers)};
  return ComputePlan(job, observed, now, true, PlanOptions{"launcher:test", seconds(300)});
}

std::vector<std::string> Reasons(const Plan& plan) {
  std::vector<std::string> out;
  for (const EventSpec& e : plan.events) out.push_back(e.reason);
  return out;
}

// The job after `plan`'s status write.
CachedJob After(CachedJob job, const Plan& plan) {
  job.job.status = plan.status;
  return job;
}

TEST(InPlacePlanTest, PollsNodeZerosLauncherWhileTheGangRuns) {
  const Plan plan = RunPass(RunningJob(), RunningPods(), T0(), std::nullopt);
  ASSERT_TRUE(plan.launcher_poll.has_value());
  EXPECT_EQ(*plan.launcher_poll, "job-worker-0");
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_LE(*plan.requeue_after, kLauncherPollInterval);

  // Every restart mode: the answer carries the trainers' progress (training_progress.h).
  CachedJob recreate = RunningJob();
  recreate.job.spec.failure_policy.restart_mode = api::RestartMode::kRecreate;
  EXPECT_TRUE(RunPass(recreate, RunningPods(), T0(), std::nullopt).launcher_poll);

  std::vector<kube::Pod> starting = RunningPods();
  starting[1].phase = "Pending";
  EXPECT_FALSE(RunPass(RunningJob(), starting, T0(), std::nullopt).launcher_poll);
  std::vector<kube::Pod> no_ip = RunningPods();
  no_ip[0].pod_ip.clear();
  EXPECT_FALSE(RunPass(RunningJob(), no_ip, T0(), std::nullopt).launcher_poll);
}

TEST(InPlacePlanTest, AFailureRestartIsRecordedOnceWithTheRankThatFailed) {
  LauncherObservation obs = Answer(1, true, 1);
  obs.status.last_failure =
      protocol::RoundFailure{.round = 0,
                             .node_rank = 1,
                             .rank = 3,
                             .local_rank = 1,
                             .exit_code = 7,
                             .signal = 0,
                             .reason = protocol::FailureReason::kExit,
                             .message = "",
                             .stderr_tail = {"Traceback", "RuntimeError: boom"}};
  const api::Time now = T0() + seconds(30);
  const Plan plan = RunPass(RunningJob(), RunningPods(), now, obs);

  EXPECT_EQ(plan.status.attempt, 0);  // the pods stay, and so does their attempt
  EXPECT_EQ(plan.status.restarts.in_place, 1);
  EXPECT_EQ(plan.status.restarts.failures, 1);
  ASSERT_TRUE(plan.status.last_restart.has_value());
  const api::LastRestart& last = *plan.status.last_restart;
  EXPECT_EQ(last.mode, api::RestartMode::kInPlace);
  EXPECT_EQ(last.reason, "RankFailed");
  EXPECT_EQ(last.attempt, 0);
  EXPECT_EQ(last.time, now);
  for (const char* part : {"rank 3", "local rank 1", "job-worker-1", "exited with code 7",
                           "RuntimeError: boom", "1 of failurePolicy.maxRestarts 3"}) {
    EXPECT_NE(last.message.find(part), std::string::npos) << part << " in " << last.message;
  }
  ASSERT_TRUE(plan.status.rendezvous.has_value());
  EXPECT_EQ(plan.status.rendezvous->attempt, 0);
  EXPECT_EQ(plan.status.rendezvous->round, 1);
  EXPECT_EQ(plan.status.rendezvous->failure_restarts, 1);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "RankFailed");
  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_EQ(plan.restart->mode, api::RestartMode::kInPlace);
  EXPECT_TRUE(plan.pod_deletes.empty());
  EXPECT_EQ(plan.status.state, api::JobState::kRunning);

  // The next pass sees the same answer: nothing new.
  const Plan again = RunPass(After(RunningJob(), plan), RunningPods(), now + seconds(10), obs);
  EXPECT_EQ(again.status.restarts.in_place, 1);
  EXPECT_EQ(again.status.restarts.failures, 1);
  EXPECT_TRUE(again.events.empty());
  EXPECT_FALSE(again.restart.has_value());
}

TEST(InPlacePlanTest, AnAnswerOfAnotherAttemptsServerStartsFromZero) {
  // Recorded for attempt 0; attempt 1's fresh server reports 1 restart: it is new.
  CachedJob job = RunningJob();
  job.job.status.attempt = 1;
  job.job.status.restarts.failures = 2;
  job.job.status.restarts.in_place = 1;
  job.job.status.rendezvous = api::RendezvousStatus{0, 1, 1, 0};
  std::vector<kube::Pod> pods = RunningPods();
  for (kube::Pod& p : pods) p.meta.labels[std::string(api::kLabelAttempt)] = "1";
  const Plan plan = RunPass(job, pods, T0(), Answer(2, true, 1));
  EXPECT_EQ(plan.status.restarts.in_place, 2);
  EXPECT_EQ(plan.status.restarts.failures, 3);
  EXPECT_EQ(plan.status.rendezvous->attempt, 1);
}

TEST(InPlacePlanTest, AFailedPodsRestartCountIsNotCountedTwice) {
  // One in-place restart recorded while it ran; then the pod fails after a second one. The
  // termination message says restartCount 2: only 1 of them is new.
  CachedJob job = RunningJob();
  job.job.status.restarts.failures = 1;
  job.job.status.restarts.in_place = 1;
  job.job.status.rendezvous = api::RendezvousStatus{0, 1, 1, 0};
  kube::Pod failed = FailedPod("worker", 1, 3);
  failed.container_statuses[0].message = R"({"reason":"exit","restartCount":2,"stderrTail":[]})";
  const Plan plan = RunPass(job, {Pod("worker", 0, "Running"), failed}, T0(), std::nullopt);
  // maxRestarts 3: used 1 + 1 unrecorded = 2 < 3, so this restart is allowed.
  EXPECT_EQ(plan.status.attempt, 1) << plan.status.message;
  EXPECT_EQ(plan.status.restarts.failures, 3);  // 1 recorded + 1 unrecorded + this failure
  EXPECT_EQ(plan.status.restarts.in_place, 2);
}

TEST(InPlacePlanTest, ASucceededJobRecordsRestartsFromTheTerminationMessages) {
  std::vector<kube::Pod> pods = {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Succeeded")};
  for (kube::Pod& p : pods) {
    kube::ContainerStatus c;
    c.name = "trainer";
    c.state = "terminated";
    c.exit_code = 0;
    c.message = R"({"reason":"succeeded","restartCount":1,"stderrTail":[]})";
    p.container_statuses.push_back(c);
  }
  const Plan plan = RunPass(RunningJob(), pods, T0(), std::nullopt);
  EXPECT_EQ(plan.status.state, api::JobState::kSucceeded);
  EXPECT_EQ(plan.status.restarts.in_place, 1);
  EXPECT_EQ(plan.status.restarts.failures, 1);
  ASSERT_TRUE(plan.status.last_restart.has_value());
  EXPECT_EQ(plan.status.last_restart->mode, api::RestartMode::kInPlace);
}

CachedJob Requested(const std::string& value) {
  CachedJob job = RunningJob();
  job.job.metadata.annotations[std::string(api::kAnnotationRestartRequest)] = value;
  return job;
}

TEST(InPlacePlanTest, ARestartRequestAsksTheLaunchersOnce) {
  const api::Time now = T0() + seconds(100);
  const Plan plan = RunPass(Requested("1"), RunningPods(), now, Answer(0, true));
  ASSERT_TRUE(plan.launcher_restart.has_value());
  EXPECT_EQ(plan.launcher_restart->pod, "job-worker-0");
  EXPECT_EQ(plan.launcher_restart->request, "1");
  ASSERT_TRUE(plan.status.restart_request.has_value());
  const api::RestartRequestStatus& req = *plan.status.restart_request;
  EXPECT_EQ(req.value, "1");
  EXPECT_EQ(req.mode, api::RestartMode::kInPlace);
  EXPECT_EQ(req.state, api::RestartRequestState::kPending);
  EXPECT_EQ(req.attempt, 0);
  EXPECT_EQ(req.time, now);
  EXPECT_EQ(Reasons(plan), std::vector<std::string>{"RestartRequested"});
  EXPECT_EQ(plan.events[0].type, "Normal");
  EXPECT_TRUE(plan.pod_deletes.empty());
  EXPECT_EQ(plan.status.attempt, 0);

  // Handled: the next pass (same value, Restart not answered yet) sends nothing new.
  const Plan again =
      RunPass(After(Requested("1"), plan), RunningPods(), now + seconds(1), std::nullopt);
  EXPECT_FALSE(again.launcher_restart.has_value());
  EXPECT_EQ(again.status.restart_request->state, api::RestartRequestState::kPending);
  EXPECT_TRUE(again.events.empty());
}

TEST(InPlacePlanTest, ARequestWaitsForARunningGang) {
  std::vector<kube::Pod> starting = RunningPods();
  starting[1].phase = "Pending";
  const Plan plan = RunPass(Requested("1"), starting, T0(), Answer(0, true));
  EXPECT_FALSE(plan.launcher_restart.has_value());
  EXPECT_FALSE(plan.status.restart_request.has_value());
  // The launchers are between rounds (an in-place restart of their own): wait too.
  const Plan gathering = RunPass(Requested("1"), RunningPods(), T0(), Answer(1, false));
  EXPECT_FALSE(gathering.launcher_restart.has_value());
  EXPECT_FALSE(gathering.status.restart_request.has_value());
}

TEST(InPlacePlanTest, APendingRequestCompletesWhenALaterRoundRuns) {
  const api::Time sent = T0() + seconds(100);
  const Plan first = RunPass(Requested("1"), RunningPods(), sent, Answer(0, true));
  LauncherObservation obs = Answer(1, true, 0, 1);
  obs.restart = LauncherObservation::RestartAnswer{"1", true, {true, 0, ""}, ""};
  const Plan done = RunPass(After(Requested("1"), first), RunningPods(), sent + seconds(3), obs);
  ASSERT_TRUE(done.status.restart_request.has_value());
  EXPECT_EQ(done.status.restart_request->state, api::RestartRequestState::kCompleted);
  EXPECT_EQ(done.status.restart_request->round, 0);
  EXPECT_EQ(done.status.restarts.in_place, 1);
  EXPECT_EQ(done.status.restarts.failures, 0);  // requested: not the job's failure
  ASSERT_TRUE(done.status.last_restart.has_value());
  EXPECT_EQ(done.status.last_restart->mode, api::RestartMode::kInPlace);
  EXPECT_EQ(done.status.last_restart->reason, "RestartRequested");
  EXPECT_EQ(done.status.attempt, 0);
  EXPECT_TRUE(done.pod_deletes.empty());
}

TEST(InPlacePlanTest, APendingRequestFallsBackToRecreateAfterTheBound) {
  const api::Time sent = T0() + seconds(100);
  CachedJob job = Requested("1");
  job.job.spec.failure_policy.in_place_timeout_seconds = 20;
  const Plan first = RunPass(job, RunningPods(), sent, Answer(0, true));
  LauncherObservation stuck = Answer(1, false, 0, 1);  // the new round never completes
  stuck.restart = LauncherObservation::RestartAnswer{"1", true, {true, 0, ""}, ""};
  const Plan waiting = RunPass(After(job, first), RunningPods(), sent + seconds(19), stuck);
  EXPECT_EQ(waiting.status.restart_request->state, api::RestartRequestState::kPending);
  EXPECT_EQ(waiting.status.attempt, 0);
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_LE(*waiting.requeue_after, seconds(2));

  const Plan late = RunPass(After(job, waiting), RunningPods(), sent + seconds(20), stuck);
  EXPECT_EQ(late.status.restart_request->state, api::RestartRequestState::kFellBack);
  EXPECT_EQ(late.status.restart_request->mode, api::RestartMode::kRecreate);
  EXPECT_EQ(late.status.attempt, 1);
  ASSERT_TRUE(late.status.last_restart.has_value());
  EXPECT_EQ(late.status.last_restart->mode, api::RestartMode::kRecreate);
  EXPECT_EQ(late.status.last_restart->reason, "InPlaceRestartTimeout");
  EXPECT_NE(late.status.last_restart->message.find("inPlaceTimeoutSeconds"), std::string::npos);
  EXPECT_EQ(late.status.restarts.failures, 0);
  EXPECT_EQ(late.pod_deletes.size(), 2u);
  EXPECT_EQ(Reasons(late), std::vector<std::string>{"InPlaceRestartTimeout"});
  EXPECT_EQ(late.events[0].type, "Warning");
}

TEST(InPlacePlanTest, ARefusedRestartFallsBackAtOnce) {
  const Plan first = RunPass(Requested("1"), RunningPods(), T0(), Answer(0, true));
  LauncherObservation refused;
  refused.pod_uid = "pod-uid-worker0";
  refused.restart =
      LauncherObservation::RestartAnswer{"1", true, {false, 0, "round 0 is finishing"}, ""};
  const Plan plan = RunPass(After(Requested("1"), first), RunningPods(), T0() + seconds(1),
                            refused);
  EXPECT_EQ(plan.status.restart_request->state, api::RestartRequestState::kFellBack);
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.last_restart->reason, "InPlaceRestartRefused");
}

TEST(InPlacePlanTest, UnreachableLaunchersMeanRecreate) {
  LauncherObservation down;
  down.pod_uid = "pod-uid-worker0";
  down.error = "connection refused";
  const Plan plan = RunPass(Requested("1"), RunningPods(), T0(), down);
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.last_restart->reason, "InPlaceRestartUnavailable");
  EXPECT_EQ(plan.status.restart_request->state, api::RestartRequestState::kFellBack);
  EXPECT_NE(plan.status.last_restart->message.find("connection refused"), std::string::npos);
}

TEST(InPlacePlanTest, WithRestartModeRecreateARequestRecreatesTheGang) {
  CachedJob job = Requested("abc");
  job.job.spec.failure_policy.restart_mode = api::RestartMode::kRecreate;
  const Plan plan = RunPass(job, RunningPods(), T0(), std::nullopt);
  EXPECT_FALSE(plan.launcher_restart.has_value());
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.last_restart->mode, api::RestartMode::kRecreate);
  EXPECT_EQ(plan.status.last_restart->reason, "RestartRequested");
  EXPECT_EQ(plan.status.last_restart->backoff_seconds, 0);
  EXPECT_EQ(plan.status.restarts.failures, 0);
  EXPECT_EQ(plan.status.restart_request->state, api::RestartRequestState::kRecreated);
  EXPECT_EQ(plan.pod_deletes.size(), 2u);
  EXPECT_EQ(plan.events[0].type, "Normal");
  // Handled once.
  const Plan again = RunPass(After(job, plan), {}, T0() + seconds(1), std::nullopt);
  EXPECT_EQ(again.status.attempt, 1);
}

TEST(InPlacePlanTest, LauncherReasonsMapToCamelCase) {
  using protocol::FailureReason;
  EXPECT_EQ(InPlaceReason(FailureReason::kExit), "RankFailed");
  EXPECT_EQ(InPlaceReason(FailureReason::kSignal), "RankFailed");
  EXPECT_EQ(InPlaceReason(FailureReason::kUnknown), "RankFailed");
  EXPECT_EQ(InPlaceReason(FailureReason::kHang), "Hang");
  EXPECT_EQ(InPlaceReason(FailureReason::kPeerLost), "PeerLost");
  EXPECT_EQ(InPlaceReason(FailureReason::kLauncher), "LauncherError");
}

}  // namespace
}  // namespace lockstep::controller
