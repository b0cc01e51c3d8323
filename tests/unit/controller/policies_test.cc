// The success and failure policies on their own.
#include <gtest/gtest.h>

#include "operator/controller/clean_pod_policy.h"
#include "operator/controller/failure_policy.h"
#include "operator/controller/success_policy.h"
#include "operator/controller/timers.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::FailedPod;
using testing::Job;
using testing::Pod;

TEST(SuccessPolicyTest, AllWorkersMustSucceedByDefault) {
  api::TrainingJobSpec spec = Job(2).job.spec;
  EXPECT_FALSE(EvaluateSuccess(spec, {Pod("worker", 0, "Succeeded")}));
  EXPECT_TRUE(EvaluateSuccess(spec, {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Succeeded")}));
  // The same index twice (a stale duplicate in a list) does not count twice.
  EXPECT_FALSE(EvaluateSuccess(spec, {Pod("worker", 0, "Succeeded"), Pod("worker", 0, "Succeeded")}));
}

TEST(SuccessPolicyTest, AnyOperator) {
  api::TrainingJobSpec spec = Job(3).job.spec;
  spec.success_policy = api::SuccessPolicy{api::SuccessOperator::kAny, {}};
  EXPECT_TRUE(EvaluateSuccess(spec, {Pod("worker", 2, "Succeeded"), Pod("worker", 0, "Running")}));
}

TEST(SuccessPolicyTest, ChiefDecidesWhenPresent) {
  api::TrainingJobSpec spec = Job(2).job.spec;
  spec.roles.push_back({"chief", 1, std::nullopt, spec.pod_template});
  EXPECT_FALSE(EvaluateSuccess(spec, {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Succeeded")}));
  EXPECT_TRUE(EvaluateSuccess(spec, {Pod("chief", 0, "Succeeded")}));
}

// DecideFailure's table is failure_policy_test.cc; here only its plainest answers.
TEST(FailurePolicyTest, NoFailedPodNoDecision) {
  EXPECT_EQ(DecideFailure(Job().job, {Pod("worker", 0, "Running")}, {}).action,
            FailureAction::kNone);
}

TEST(FailurePolicyTest, RulesMatchByExitCodeAndContainer) {
  api::FailureRule in;
  in.name = "in";
  in.action = api::RuleAction::kFailJob;
  in.on_exit_codes.values = {1, 2};
  api::FailureRule side = in;
  side.name = "side";
  side.on_exit_codes.container_name = "sidecar";
  side.on_exit_codes.values = {7};
  api::FailureRule not_in = in;
  not_in.name = "not-in";
  not_in.on_exit_codes.op = api::ExitCodeOperator::kNotIn;
  not_in.on_exit_codes.values = {0};
  const std::vector<api::FailureRule> rules = {side, in, not_in};
  EXPECT_EQ(MatchFailureRule(rules, "trainer", true, 2)->name, "in");
  EXPECT_EQ(MatchFailureRule(rules, "sidecar", false, 7)->name, "side");
  EXPECT_EQ(MatchFailureRule(rules, "trainer", true, 9)->name, "not-in");
  EXPECT_EQ(MatchFailureRule(rules, "sidecar", false, 9), nullptr);
}

// An eviction is a disruption the job did not cause: a restart, not a failure of the job.
TEST(FailurePolicyTest, EvictedPodWithoutContainerStatus) {
  kube::Pod p = Pod("worker", 0, "Failed");
  p.reason = "Evicted";
  p.message = "node low on memory";
  FailureDecision d = DecideFailure(Job().job, {p}, {});
  EXPECT_EQ(d.action, FailureAction::kRestart);
  EXPECT_EQ(d.kind, FailureKind::kDisruption);
  EXPECT_EQ(d.reason, "PodDisrupted");
  EXPECT_NE(d.message.find("job-worker-0"), std::string::npos);
  EXPECT_NE(d.message.find("Evicted: node low on memory"), std::string::npos);
}

TEST(FailurePolicyTest, FailedPodRestartsByDefault) {
  FailureDecision d = DecideFailure(Job().job, {FailedPod("worker", 0, 3)}, {});
  EXPECT_EQ(d.action, FailureAction::kRestart);
  EXPECT_EQ(d.kind, FailureKind::kFailure);
  EXPECT_EQ(d.reason, "PodFailed");
}

TEST(CleanPodPolicyTest, SkipsPodsAlreadyBeingDeleted) {
  kube::Pod going = Pod("worker", 1, "Running");
  going.meta.deletion_timestamp = "2026-01-01T00:00:00Z";
  EXPECT_EQ(PodsToClean(api::CleanPodPolicy::kAll, {Pod("worker", 0, "Failed"), going}).size(),
            1u);
}

TEST(TimersTest, DeadlineAndTtl) {
  api::TrainingJob job = Job().job;
  EXPECT_FALSE(CheckActiveDeadline(job, testing::T0()));
  job.spec.run_policy.active_deadline_seconds = 10;
  job.status.start_time = testing::T0();
  auto d = CheckActiveDeadline(job, testing::T0() + std::chrono::milliseconds(2500));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->expired);
  EXPECT_EQ(d->remaining.count(), 8);  // rounded up
  EXPECT_TRUE(CheckActiveDeadline(job, testing::T0() + std::chrono::seconds(10))->expired);
  job.spec.run_policy.ttl_seconds_after_finished = 0;
  EXPECT_FALSE(CheckTtlAfterFinished(job, testing::T0()));
  job.status.completion_time = testing::T0();
  EXPECT_TRUE(CheckTtlAfterFinished(job, testing::T0())->expired);
}

}  // namespace
}  // namespace lockstep::controller
