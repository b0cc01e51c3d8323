// The pass's table (plan.h PlanSteps): its order pinned row by row, and ComputePlan following it:
// in each case two or more rules hold, and the earlier step claims the pass (Plan::decided_by).
// The claims that need a launcher's answer or an elastic capacity are checked beside their
// fixtures: PeerLoss (peer_loss_test.cc), AwaitingSpare (spare_plan_test.cc), Resize
// (elastic_policy_test.cc).
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "operator/api/conditions.h"
#include "operator/api/time.h"
#include "operator/controller/plan.h"
#include "operator/kueue/workload.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::FailedPod;
using testing::InAttempt;
using testing::Job;
using testing::Pod;
using testing::T0;

struct Row {
  std::string name;
  PlanStage stage;
  std::string owner;  // under operator/
  bool claims;
};

// Changing this list changes the controller's behaviour: say why in the commit.
TEST(PlanStepsTest, TheOrderOfThePass) {
  using enum PlanStage;
  const std::vector<Row> expected = {
      {"Deleting", kGate, "controller/plan.cc", true},
      {"UnreadableStatus", kGate, "controller/plan.cc", true},
      {"Identity", kGate, "controller/plan.cc", false},
      {"UndecodableSpec", kGate, "controller/plan.cc", true},
      {"InvalidSpec", kGate, "api/validation.cc", true},
      {"SpecValid", kHeld, "controller/plan.cc", false},
      {"Counters", kHeld, "controller/plan.cc", false},
      {"KueueDecision", kHeld, "controller/kueue_plan.cc", false},
      {"Finished", kHeld, "controller/plan.cc", true},
      {"Suspended", kHeld, "controller/plan.cc", true},
      {"Queued", kHeld, "controller/plan.cc", true},
      {"Resumed", kActive, "controller/plan.cc", false},
      {"DeadlineExceeded", kActive, "controller/timers.cc", true},
      {"Exclusions", kActive, "controller/restart_plan.cc", false},
      {"SpareRecord", kActive, "controller/spare_plan.cc", false},
      {"StaleDeletes", kActive, "controller/restart_plan.cc", false},
      {"Failure", kActive, "controller/failure_policy.cc", false},
      {"PeerLoss", kActive, "controller/peer_loss_plan.cc", true},
      {"AwaitingCulprit", kActive, "controller/failure_policy.cc", true},
      {"StartupFailing", kActive, "controller/startup_policy.cc", false},
      {"FailJob", kActive, "controller/failure_policy.cc", true},
      {"AwaitingSpare", kActive, "controller/spare_plan.cc", true},
      {"FailureRestart", kActive, "controller/restart_plan.cc", true},
      {"InPlaceRecord", kActive, "controller/inplace_plan.cc", false},
      {"TrainingProgress", kActive, "controller/training_progress.cc", false},
      {"Succeeded", kActive, "controller/success_policy.cc", true},
      {"RestartRequest", kActive, "controller/inplace_plan.cc", true},
      {"Resize", kActive, "controller/elastic_policy.cc", true},
      {"StartTime", kActive, "controller/plan.cc", false},
      {"RestartWait", kActive, "controller/restart_plan.cc", true},
      {"SpareDeletes", kActive, "controller/spare_plan.cc", false},
      {"PodsUnbuildable", kActive, "api/children.cc", true},
      {"Progress", kActive, "controller/plan.cc", true},
  };
  const std::vector<PlanStep>& steps = PlanSteps();
  ASSERT_EQ(steps.size(), expected.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(steps[i].name, expected[i].name) << "row " << i;
    EXPECT_EQ(steps[i].stage, expected[i].stage);
    EXPECT_EQ(steps[i].owner, "operator/" + expected[i].owner);
    EXPECT_EQ(!steps[i].claims.empty(), expected[i].claims);
  }
}

TEST(PlanStepsTest, NamesAreUniqueAndTheLastStepClaimsEveryPassThatReachesIt) {
  std::set<std::string_view> names;
  for (const PlanStep& s : PlanSteps()) EXPECT_TRUE(names.insert(s.name).second) << s.name;
  EXPECT_FALSE(PlanSteps().back().claims.empty());
}

api::Condition True(std::string_view type) {
  api::Condition c;
  c.type = std::string(type);
  c.status = api::ConditionStatus::kTrue;
  c.reason = "R";
  return c;
}

void Started(CachedJob& c) { c.job.status.start_time = T0(); }
void Finished(CachedJob& c) { c.job.status.conditions.push_back(True(api::kConditionSucceeded)); }
void Suspend(CachedJob& c) { c.job.spec.run_policy.suspend = true; }
void Invalid(CachedJob& c) { c.job.spec.elastic = api::ElasticPolicy{4, 2}; }
void QueueLabel(CachedJob& c) {
  c.job.metadata.labels[std::string(kueue::kQueueNameLabel)] = "team-a";
}
void RequestRestart(CachedJob& c) {
  c.job.metadata.annotations[std::string(api::kAnnotationRestartRequest)] = "r1";
}
void NoRestarts(CachedJob& c) {
  Started(c);
  c.job.spec.failure_policy.max_restarts = 0;
}
// Attempt 1, decided at T0 with a 10-s backoff.
void Restarted(CachedJob& c) {
  Started(c);
  c.job.status.attempt = 1;
  c.job.status.last_restart =
      api::LastRestart{T0(), "PodFailed", "m", 1, 10, api::RestartMode::kRecreate, {}};
}

kube::Pod FinishedAt(kube::Pod pod, api::Time at) {
  pod.container_statuses[0].finished_at = api::FormatTime(at);
  return pod;
}

struct Case {
  std::string name;
  std::vector<std::function<void(CachedJob&)>> job;  // applied in order to a 2-worker job
  std::vector<kube::Pod> pods;
  std::string decided_by;
  int now_offset_s = 0;
  std::string launcher_image = "launcher:test";
  bool kueue = false;  // Observed::kueue: synced, no Workload yet
};

std::vector<Case> Cases() {
  const kube::Pod running0 = Pod("worker", 0, "Running");
  const kube::Pod running1 = Pod("worker", 1, "Running");
  return {
      {"being deleted before an unreadable status",
       {[](CachedJob& c) {
         c.job.metadata.deletion_timestamp = T0();
         c.status_error = "status.attempt: not a number";
       }},
       {},
       "Deleting"},
      {"an unreadable status before an undecodable spec",
       {[](CachedJob& c) {
         c.status_error = "status.attempt: not a number";
         c.spec_error = "spec.framework: unknown";
       }},
       {},
       "UnreadableStatus"},
      {"an undecodable spec before an invalid one",
       {Invalid, [](CachedJob& c) { c.spec_error = "spec.framework: unknown"; }},
       {},
       "UndecodableSpec"},
      {"an invalid spec before finished", {Invalid, Finished}, {}, "InvalidSpec"},
      {"finished before suspended", {Finished, Suspend}, {}, "Finished"},
      {"suspended before queued by Kueue",
       {Suspend, QueueLabel},
       {},
       "Suspended",
       0,
       "launcher:test",
       true},
      {"queued by Kueue before created", {QueueLabel}, {}, "Queued", 0, "launcher:test", true},
      {"the deadline before a failure",
       {Started, [](CachedJob& c) { c.job.spec.run_policy.active_deadline_seconds = 10; }},
       {running0, FailedPod("worker", 1, 1)},
       "DeadlineExceeded",
       60},
      {"awaiting the culprit before the failure's restart",
       {Started},
       {running0, FinishedAt(FailedPod("worker", 1, 75), T0())},
       "AwaitingCulprit",
       1},
      {"failing the job before success",
       {NoRestarts},
       {Pod("worker", 0, "Succeeded"), FailedPod("worker", 1, 1)},
       "FailJob"},
      {"the failure's restart before a restart request",
       {Started, RequestRestart},
       {running0, FailedPod("worker", 1, 1)},
       "FailureRestart"},
      {"success before a restart request",
       {Started, RequestRestart},
       {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Succeeded")},
       "Succeeded"},
      {"a restart request (Recreate) before progress",
       {Started, RequestRestart,
        [](CachedJob& c) { c.job.spec.failure_policy.restart_mode = api::RestartMode::kRecreate; }},
       {running0, running1},
       "RestartRequest"},
      {"the restart wait before the creates", {Restarted}, {}, "RestartWait", 5},
      {"pods that cannot be built", {}, {}, "PodsUnbuildable", 0, ""},
      {"a fresh job creates its pods", {}, {}, "Progress"},
      {"a running gang reports progress",
       {Started},
       {InAttempt(running0, 0), InAttempt(running1, 0)},
       "Progress"},
  };
}

class PlanStepsCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanStepsCaseTest, TheEarlierStepClaimsThePass) {
  const Case& tc = GetParam();
  CachedJob job = Job(2);
  for (const auto& edit : tc.job) edit(job);
  Observed observed;
  observed.pods = tc.pods;
  observed.service_exists = observed.network_policy_exists = true;
  if (tc.kueue) {
    kueue::KueueObservation k;
    k.synced = true;
    observed.kueue = std::move(k);
  }
  const PlanOptions options{tc.launcher_image, std::chrono::seconds(300)};
  const api::Time now = T0() + std::chrono::seconds(tc.now_offset_s);
  const Plan plan = ComputePlan(job, observed, now, true, options);
  EXPECT_EQ(plan.decided_by, tc.decided_by);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& param) {
  std::string out;
  for (char ch : param.param.name) {
    out += std::isalnum(static_cast<unsigned char>(ch)) != 0 ? ch : '_';
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, PlanStepsCaseTest, ::testing::ValuesIn(Cases()), CaseName);

// Every claiming step is claimed by a case here or beside its fixture (the file header).
TEST(PlanStepsTest, EveryClaimingStepHasACase) {
  std::set<std::string> covered = {"PeerLoss", "AwaitingSpare", "Resize"};
  for (const Case& c : Cases()) covered.insert(c.decided_by);
  for (const PlanStep& s : PlanSteps()) {
    if (!s.claims.empty()) {
      EXPECT_TRUE(covered.count(std::string(s.name)) != 0) << s.name;
    }
  }
}

}  // namespace
}  // namespace lockstep::controller
