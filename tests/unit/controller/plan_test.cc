// ComputePlan, table-driven: one row per situation a reconcile can meet.
#include "operator/controller/plan.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

// Table rows leave their trailing expectation fields at the defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/api/time.h"
#include "operator/controller/failure_policy.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::FailedPod;
using testing::InAttempt;
using testing::Job;
using testing::LostNode;
using testing::Pod;
using testing::T0;

api::Condition Cond(std::string_view type, bool value, std::string reason = "R") {
  api::Condition c;
  c.type = std::string(type);
  c.status = value ? api::ConditionStatus::kTrue : api::ConditionStatus::kFalse;
  c.reason = std::move(reason);
  return c;
}

struct Case {
  std::string name;
  std::function<void(CachedJob&)> job;  // edits the 2-worker job
  std::vector<kube::Pod> pods;
  bool settled = true;
  int now_offset_s = 0;
  // Expectations.
  size_t creates = 0;
  size_t deletes = 0;
  std::optional<api::JobState> state;
  std::vector<std::string> events;  // reasons, in order
  bool delete_job = false;
  std::optional<int> requeue_s;
  Outcome outcome = Outcome::kNone;
  bool became_running = false;
  std::string stalled_reason;  // expected Stalled=True reason, if any
};

std::vector<Case> Cases() {
  auto none = [](CachedJob&) {};
  auto started = [](CachedJob& c) { c.job.status.start_time = T0(); };
  auto finished_ok = [](CachedJob& c) {
    c.job.status.conditions.push_back(Cond(api::kConditionSucceeded, true, "Succeeded"));
    c.job.status.state = api::JobState::kSucceeded;
    c.job.status.completion_time = T0();
  };
  auto no_restarts = [started](CachedJob& c) {
    started(c);
    c.job.spec.failure_policy.max_restarts = 0;
  };
  // Attempt 1, decided at T0 after a pod failure, with the first backoff (10 s).
  auto restarted = [started](CachedJob& c) {
    started(c);
    c.job.status.attempt = 1;
    c.job.status.restarts = {1, 0, 1};
    c.job.status.last_restart = api::LastRestart{T0(), "PodFailed", "m", 1, 10,
                                                 api::RestartMode::kRecreate, {}};
    c.job.status.conditions.push_back(Cond(api::kConditionRestarting, true, "PodFailed"));
  };
  kube::Pod evicted = Pod("worker", 0, "Failed");
  evicted.reason = "Evicted";
  return {
      {"fresh job creates every pod", none, {}, true, 0, 2, 0, api::JobState::kPending},
      {"unsettled expectations create nothing", none, {}, false, 0, 0, 0,
       api::JobState::kPending},
      {"only missing pods are created", started, {Pod("worker", 0, "Pending", "")}, true, 0, 1,
       0, api::JobState::kPending},
      {"all pods exist but are unbound", started,
       {Pod("worker", 0, "Pending", ""), Pod("worker", 1, "Pending", "")}, true, 0, 0, 0,
       api::JobState::kScheduling},
      {"all pods running", started, {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")},
       true, 0, 0, 0, api::JobState::kRunning, {"Running"}, false, std::nullopt, Outcome::kNone,
       true},
      {"all workers succeeded", started,
       {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Succeeded")}, true, 0, 0, 0,
       api::JobState::kSucceeded, {"Succeeded"}, false, std::nullopt, Outcome::kSucceeded},
      {"one worker succeeded, one running", started,
       {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Running")}, true, 0, 0, 0,
       api::JobState::kRunning, {"Running"}, false, std::nullopt, Outcome::kNone, true},
      {"a failed pod restarts the gang by default, after a backoff", started,
       {FailedPod("worker", 0, 3), Pod("worker", 1, "Running")}, true, 0, 0, 2,
       api::JobState::kRestarting, {"PodFailed"}, false, 10},
      {"unsettled expectations decide a restart but delete nothing", started,
       {FailedPod("worker", 0, 3), Pod("worker", 1, "Running")}, false, 0, 0, 0,
       api::JobState::kRestarting, {"PodFailed"}, false, 10},
      {"an evicted pod restarts the gang without a backoff", started,
       {evicted, Pod("worker", 1, "Running")}, true, 0, 0, 2, api::JobState::kRestarting,
       {"PodDisrupted"}},
      {"the next attempt waits for the old attempt's pods", restarted,
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, true, 5, 0, 2,
       api::JobState::kRestarting},
      {"the next attempt waits for its backoff", restarted, {}, true, 5, 0, 0,
       api::JobState::kRestarting, {}, false, 7},
      {"the next attempt is created after its backoff", restarted, {}, true, 11, 2, 0,
       api::JobState::kRestarting},
      {"the next attempt runs: Recovered", restarted,
       {InAttempt(Pod("worker", 0, "Running"), 1), InAttempt(Pod("worker", 1, "Running"), 1)},
       true, 40, 0, 0, api::JobState::kRunning, {"Recovered"}},
      {"a failure past maxRestarts fails the job and cleans running pods", no_restarts,
       {FailedPod("worker", 0, 3), Pod("worker", 1, "Running")}, true, 0, 0, 1,
       api::JobState::kFailed, {"MaxRestartsExceeded"}, false, std::nullopt, Outcome::kFailed},
      {"a used-up maxRestarts fails the job",
       [started](CachedJob& c) {
         started(c);
         c.job.status.restarts.failures = 3;
       },
       {FailedPod("worker", 0, 3), Pod("worker", 1, "Running")}, true, 0, 0, 1,
       api::JobState::kFailed, {"MaxRestartsExceeded"}, false, std::nullopt, Outcome::kFailed},
      {"cleanPodPolicy All deletes terminal pods too",
       [no_restarts](CachedJob& c) {
         no_restarts(c);
         c.job.spec.run_policy.clean_pod_policy = api::CleanPodPolicy::kAll;
       },
       {FailedPod("worker", 0, 3), Pod("worker", 1, "Running")}, true, 0, 0, 2,
       api::JobState::kFailed, {"MaxRestartsExceeded"}, false, std::nullopt, Outcome::kFailed},
      {"cleanPodPolicy None keeps a failed job's pods",
       [no_restarts](CachedJob& c) {
         no_restarts(c);
         c.job.spec.run_policy.clean_pod_policy = api::CleanPodPolicy::kNone;
       },
       {FailedPod("worker", 0, 3), Pod("worker", 1, "Running")}, true, 0, 0, 0,
       api::JobState::kFailed, {"MaxRestartsExceeded"}, false, std::nullopt, Outcome::kFailed},
      {"deadline not reached requeues at the deadline",
       [](CachedJob& c) {
         c.job.status.start_time = T0();
         c.job.spec.run_policy.active_deadline_seconds = 60;
       },
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, true, 20, 0, 0,
       api::JobState::kRunning, {"Running"}, false, 40, Outcome::kNone, true},
      {"deadline exceeded fails the job",
       [](CachedJob& c) {
         c.job.status.start_time = T0();
         c.job.spec.run_policy.active_deadline_seconds = 60;
       },
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, true, 61, 0, 2,
       api::JobState::kFailed, {"DeadlineExceeded"}, false, std::nullopt, Outcome::kFailed},
      {"suspend deletes active pods",
       [](CachedJob& c) {
         c.job.status.start_time = T0();
         c.job.spec.run_policy.suspend = true;
       },
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Pending", "")}, true, 0, 0, 2,
       api::JobState::kSuspended, {"Suspended"}},
      {"suspend waits for settled expectations before deleting",
       [](CachedJob& c) { c.job.spec.run_policy.suspend = true; },
       {Pod("worker", 0, "Running")}, false, 0, 0, 0, api::JobState::kSuspended, {"Suspended"}},
      {"resume recreates pods",
       [](CachedJob& c) {
         c.job.status.conditions.push_back(Cond(api::kConditionSuspended, true, "Suspended"));
       },
       {}, true, 0, 2, 0, api::JobState::kPending, {"Resumed"}},
      {"finished job within its TTL requeues",
       [finished_ok](CachedJob& c) {
         finished_ok(c);
         c.job.spec.run_policy.ttl_seconds_after_finished = 30;
       },
       {Pod("worker", 0, "Succeeded")}, true, 10, 0, 0, api::JobState::kSucceeded, {}, false,
       20},
      {"finished job past its TTL is deleted",
       [finished_ok](CachedJob& c) {
         finished_ok(c);
         c.job.spec.run_policy.ttl_seconds_after_finished = 30;
       },
       {}, true, 31, 0, 0, api::JobState::kSucceeded, {}, true},
      {"finished job creates nothing", finished_ok, {}, true, 0, 0, 0,
       api::JobState::kSucceeded},
      {"invalid spec is stalled and never acted on",
       [](CachedJob& c) {
         c.job.spec.elastic = api::ElasticPolicy{4, 2};
       },
       {}, true, 0, 0, 0, std::nullopt, {"InvalidSpec"}, false, std::nullopt, Outcome::kNone,
       false, "InvalidSpec"},
      {"undecodable spec is stalled",
       [](CachedJob& c) { c.spec_error = "spec.framework: unknown value \"Caffe\""; }, {}, true,
       0, 0, 0, std::nullopt, {"InvalidSpec"}, false, std::nullopt, Outcome::kNone, false,
       "InvalidSpec"},
      {"a job being deleted is left to the garbage collector",
       [](CachedJob& c) { c.job.metadata.deletion_timestamp = T0(); }, {}, true, 0, 0, 0,
       std::nullopt},
  };
}

class PlanTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanTest, Decides) {
  const Case& tc = GetParam();
  CachedJob job = Job(2);
  tc.job(job);
  Observed observed{tc.pods, true};
  const Plan plan = ComputePlan(job, observed, T0() + std::chrono::seconds(tc.now_offset_s),
                                tc.settled, PlanOptions{"launcher:test"});
  EXPECT_EQ(plan.pod_creates.size(), tc.creates);
  EXPECT_EQ(plan.pod_deletes.size(), tc.deletes);
  EXPECT_EQ(plan.status.state, tc.state);
  std::vector<std::string> reasons;
  for (const EventSpec& e : plan.events) reasons.push_back(e.reason);
  EXPECT_EQ(reasons, tc.events);
  EXPECT_EQ(plan.delete_job, tc.delete_job);
  if (tc.requeue_s) {
    ASSERT_TRUE(plan.requeue_after.has_value());
    EXPECT_EQ(plan.requeue_after->count(), *tc.requeue_s);
  }
  EXPECT_EQ(plan.outcome, tc.outcome);
  EXPECT_EQ(plan.became_running, tc.became_running);
  const api::Condition* stalled = api::FindCondition(plan.status.conditions, "Stalled");
  if (!tc.stalled_reason.empty()) {
    ASSERT_NE(stalled, nullptr);
    EXPECT_EQ(stalled->status, api::ConditionStatus::kTrue);
    EXPECT_EQ(stalled->reason, tc.stalled_reason);
  } else {
    EXPECT_TRUE(stalled == nullptr || stalled->status != api::ConditionStatus::kTrue);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, PlanTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string n;
                           for (char ch : param_info.param.name) n += std::isalnum(ch) ? ch : '_';
                           return n;
                         });

TEST(PlanDetailTest, StatusCarriesCountsSelectorAndGeneration) {
  CachedJob job = Job(2);
  job.job.metadata.generation = 7;
  Observed observed{{Pod("worker", 0, "Running"), Pod("worker", 1, "Pending", "")}, true};
  const Plan plan = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  EXPECT_EQ(plan.status.observed_generation, 7);
  EXPECT_EQ(plan.status.selector, "lockstep.dev/job-name=job");
  EXPECT_EQ(plan.status.replicas, 2);
  EXPECT_EQ(plan.status.ready_replicas, 1);
  EXPECT_EQ(plan.status.workers_ready, "1/2");
  EXPECT_EQ(plan.status.start_time, T0());
  EXPECT_TRUE(api::IsConditionTrue(plan.status.conditions, "Reconciling"));
  EXPECT_EQ(plan.status.reason, "WaitingForScheduler");
  // Scheduled is the gang scheduler's to write, never the controller's.
  EXPECT_EQ(api::FindCondition(plan.status.conditions, "Scheduled"), nullptr);
}

TEST(PlanDetailTest, KeepsTheSchedulersExplanationOfAWait) {
  CachedJob job = Job(2);
  api::Condition c = Cond(api::kConditionScheduled, false, "InsufficientCapacity");
  c.message = "needs 16 nvidia.com/gpu in one block; largest free: 12";
  job.job.status.conditions.push_back(c);
  Observed observed{{Pod("worker", 0, "Pending", ""), Pod("worker", 1, "Pending", "")}, true};
  const Plan plan = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  EXPECT_EQ(plan.status.reason, "InsufficientCapacity");
  EXPECT_EQ(plan.status.message, c.message);
  EXPECT_EQ(*api::FindCondition(plan.status.conditions, "Scheduled"), c);  // carried unchanged
}

// The scheduler's GangPlaced stays as it wrote it: all pods bound adds no controller words, and
// a gang not bound yet (a later attempt's) does not read "GangPlaced" as its state's reason.
TEST(PlanDetailTest, TheSchedulersGangPlacedIsNeitherOverwrittenNorTakenAsAWait) {
  CachedJob job = Job(2);
  api::Condition placed = Cond(api::kConditionScheduled, true, "GangPlaced");
  placed.message = "placed 2 pods on 2 nodes in rack a";
  job.job.status.conditions.push_back(placed);
  const Observed bound{{Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, true};
  EXPECT_EQ(*api::FindCondition(ComputePlan(job, bound, T0(), true, PlanOptions{"l"})
                                    .status.conditions,
                                "Scheduled"),
            placed);
  const Observed unbound{{Pod("worker", 0, "Pending", ""), Pod("worker", 1, "Pending", "")},
                         true};
  const Plan waiting = ComputePlan(job, unbound, T0(), true, PlanOptions{"l"});
  EXPECT_EQ(waiting.status.reason, "WaitingForScheduler");
  EXPECT_EQ(*api::FindCondition(waiting.status.conditions, "Scheduled"), placed);
}

TEST(PlanDetailTest, FailureMessageNamesPodExitCodeAndRule) {
  CachedJob job = Job(2);
  api::FailureRule rule;
  rule.name = "bad-args";
  rule.action = api::RuleAction::kFailJob;
  rule.on_exit_codes.values = {2};
  job.job.spec.failure_policy.rules.push_back(rule);
  Observed observed{{FailedPod("worker", 1, 2), Pod("worker", 0, "Running")}, true};
  const Plan plan = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  EXPECT_EQ(plan.status.reason, "FailJobRule");
  EXPECT_NE(plan.status.message.find("job-worker-1"), std::string::npos);
  EXPECT_NE(plan.status.message.find("exited with code 2"), std::string::npos);
  EXPECT_NE(plan.status.message.find("bad-args"), std::string::npos);
  EXPECT_TRUE(plan.status.completion_time.has_value());
}

// A 75 ("another node failed") while another pod still runs: the real failure is about to show,
// so the plan waits for it (bounded), then judges the real exit code by the rules.
TEST(PlanDetailTest, APeerLostExitWaitsForTheFailingPodThenItsCodeDecides) {
  CachedJob job = Job(2);
  api::FailureRule rule;
  rule.name = "bad-data";
  rule.action = api::RuleAction::kFailJob;
  rule.on_exit_codes.values = {3};
  job.job.spec.failure_policy.rules.push_back(rule);
  job.job.status.start_time = T0();
  kube::Pod peer = FailedPod("worker", 1, 75);
  peer.container_statuses[0].finished_at = api::FormatTime(T0());
  Observed waiting{{Pod("worker", 0, "Running"), peer}, true};
  const Plan wait = ComputePlan(job, waiting, T0() + std::chrono::seconds(1), true,
                                PlanOptions{"l"});
  EXPECT_FALSE(wait.restart.has_value());
  EXPECT_NE(wait.status.state, api::JobState::kFailed);
  EXPECT_EQ(wait.requeue_after, std::chrono::seconds(2));
  EXPECT_TRUE(wait.pod_creates.empty());

  Observed culprit{{FailedPod("worker", 0, 3), peer}, true};
  const Plan decided = ComputePlan(job, culprit, T0() + std::chrono::seconds(2), true,
                                   PlanOptions{"l"});
  EXPECT_EQ(decided.status.reason, "FailJobRule");
  EXPECT_NE(decided.status.message.find("exited with code 3"), std::string::npos);

  // Bounded: past kCulpritWait the 75 decides (default rule: restart).
  const Plan late = ComputePlan(job, waiting, T0() + kCulpritWait + std::chrono::seconds(1),
                                true, PlanOptions{"l"});
  EXPECT_TRUE(late.restart.has_value());
}

// A member of the running gang that someone else deleted and that is gone before this pass
// (failure_policy.h, step 3): the gang restarts as the next attempt, with the reason its last
// state gives, instead of refilling the attempt and leaving the scheduler a half-bound gang.
TEST(PlanDetailTest, AMemberGoneFromTheRunningGangRestartsItInsteadOfARefill) {
  CachedJob job = Job(2);
  job.job.status.start_time = T0();
  const kube::Pod left = Pod("worker", 1, "Running", "node-2");
  const kube::Pod gone = Pod("worker", 0, "Running", "node-1");

  // Without its last state the pass refills the attempt (what an operator restart still sees).
  Observed bare{{left}, true};
  const Plan refill = ComputePlan(job, bare, T0(), true, PlanOptions{"l"});
  EXPECT_FALSE(refill.restart.has_value());
  ASSERT_EQ(refill.pod_creates.size(), 1u);

  Observed observed{{left}, true};
  observed.gone_pods = {gone};
  observed.lost_nodes = {{"node-1", LostNode("NodeTainted", "node node-1: tainted")}};
  const Plan plan = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_EQ(plan.status.attempt, 1);
  ASSERT_TRUE(plan.status.last_restart.has_value());
  EXPECT_EQ(plan.status.last_restart->reason, "NodeTainted");
  EXPECT_EQ(plan.status.restarts.disruptions, 1);
  ASSERT_EQ(plan.status.excluded_nodes.size(), 1u);
  EXPECT_EQ(plan.status.excluded_nodes[0].name, "node-1");

  // No reason on it: PodDeleted, nothing excluded.
  observed.lost_nodes.clear();
  const Plan deleted = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  ASSERT_TRUE(deleted.status.last_restart.has_value());
  EXPECT_EQ(deleted.status.last_restart->reason, "PodDeleted");
  EXPECT_TRUE(deleted.status.excluded_nodes.empty());

  // A gone pod of an older attempt is that attempt's business, not this one's.
  job.job.status.attempt = 1;
  Observed older{{InAttempt(left, 1)}, true};
  older.gone_pods = {gone};  // attempt 0 (no label)
  const Plan current = ComputePlan(job, older, T0(), true, PlanOptions{"l"});
  EXPECT_FALSE(current.restart.has_value());
  EXPECT_EQ(current.pod_creates.size(), 1u);
}

TEST(PlanDetailTest, SharedChildrenAreCreatedWhenMissingEvenIfUnsettled) {
  CachedJob job = Job(1);
  const Plan plan = ComputePlan(job, Observed{{}, false}, T0(), false, PlanOptions{"l"});
  EXPECT_TRUE(plan.create_service);
  EXPECT_TRUE(plan.create_secret);
  EXPECT_TRUE(plan.pod_creates.empty());
}

// Issue 44 item 7: no cache holds the Secret, so the plan asks for it only in the job's first
// pass (no status written yet); later, the executor makes sure of it in the passes that create
// pods (plan_executor_test), and a steady-state pass asks nothing of Secrets.
TEST(PlanDetailTest, TheSecretIsAskedForInTheFirstPassOnly) {
  CachedJob job = Job(2);
  Observed all{{Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, true};
  all.network_policy_exists = true;
  const Plan first = ComputePlan(job, all, T0(), true, PlanOptions{"l"});
  EXPECT_TRUE(first.create_secret);
  EXPECT_EQ(first.status.observed_generation, job.job.metadata.generation);
  job.job.status = first.status;  // as written
  const Plan steady = ComputePlan(job, all, T0(), true, PlanOptions{"l"});
  EXPECT_FALSE(steady.create_secret);
  EXPECT_FALSE(steady.create_service || steady.create_network_policy);
  EXPECT_TRUE(steady.pod_creates.empty());
}

// Hole 4 (docs/reliability.md): a pass builds only the pods it creates, so what it holds is
// bounded by kMaxCreatesPerPass, not by the job (before: all 10,000 pods built every pass, then
// those that existed dropped). The next pass builds the next pods in node-rank order.
TEST(PlanDetailTest, ALargeJobsPassBuildsOnlyThePodsItCreates) {
  CachedJob job = Job(10000);
  const Plan first = ComputePlan(job, Observed{{}, true}, T0(), true, PlanOptions{"l"});
  ASSERT_EQ(first.pod_creates.size(), static_cast<size_t>(kMaxCreatesPerPass));
  EXPECT_EQ(first.pod_creates.front()["metadata"]["name"], job.job.metadata.name + "-worker-0");
  EXPECT_EQ(first.pod_creates.back()["metadata"]["name"],
            job.job.metadata.name + "-worker-" + std::to_string(kMaxCreatesPerPass - 1));
  Observed created{{}, true};
  for (int i = 0; i < kMaxCreatesPerPass; ++i) {
    created.pods.push_back(Pod("worker", i, "Pending", ""));
  }
  const Plan second = ComputePlan(job, created, T0(), true, PlanOptions{"l"});
  ASSERT_EQ(second.pod_creates.size(), static_cast<size_t>(kMaxCreatesPerPass));
  EXPECT_EQ(second.pod_creates.front()["metadata"]["name"],
            job.job.metadata.name + "-worker-" + std::to_string(kMaxCreatesPerPass));
}

// The pods of an attempt carry what is left of the budget (inplace_policy.h), none in Recreate.
TEST(PlanDetailTest, NewPodsCarryTheInPlaceRestartBudget) {
  auto budget_in_pods = [](CachedJob job) {
    const Plan plan = ComputePlan(job, Observed{{}, true}, T0(), true, PlanOptions{"l"});
    std::set<std::string> values;
    for (const nlohmann::json& pod : plan.pod_creates) {
      for (const nlohmann::json& e : pod["spec"]["containers"][0]["env"]) {
        if (e["name"] == "LOCKSTEP_MAX_RESTARTS") values.insert(e["value"].get<std::string>());
      }
    }
    return values;
  };
  CachedJob job = Job(2);
  job.job.spec.failure_policy.max_restarts = 5;
  job.job.status.restarts.failures = 2;
  EXPECT_EQ(budget_in_pods(job), std::set<std::string>{"3"});
  job.job.spec.failure_policy.restart_mode = api::RestartMode::kRecreate;
  EXPECT_EQ(budget_in_pods(job), std::set<std::string>{"0"});
}

TEST(PlanDetailTest, ChiefSuccessStopsParameterServersEvenWithCleanPodPolicyNone) {
  CachedJob job = Job(1);
  job.job.spec.framework = api::Framework::kTensorFlow;
  job.job.spec.run_policy.clean_pod_policy = api::CleanPodPolicy::kNone;
  job.job.spec.roles.push_back({"chief", 1, std::nullopt, job.job.spec.pod_template});
  job.job.spec.roles.push_back({"ps", 1, std::nullopt, job.job.spec.pod_template});
  job.job.status.start_time = T0();
  Observed observed{{Pod("chief", 0, "Succeeded"), Pod("worker", 0, "Running"),
                     Pod("ps", 0, "Running")},
                    true};
  const Plan plan = ComputePlan(job, observed, T0(), true, PlanOptions{"l"});
  EXPECT_EQ(plan.status.state, api::JobState::kSucceeded);
  ASSERT_EQ(plan.pod_deletes.size(), 2u);
}

TEST(PlanDetailTest, RepeatedPassOverAStalledJobEmitsNoNewEvent) {
  CachedJob job = Job(2);
  job.job.spec.elastic = api::ElasticPolicy{4, 2};
  Plan first = ComputePlan(job, Observed{}, T0(), true, PlanOptions{"l"});
  ASSERT_EQ(first.events.size(), 1u);
  job.job.status = first.status;
  Plan second = ComputePlan(job, Observed{}, T0(), true, PlanOptions{"l"});
  EXPECT_TRUE(second.events.empty());
}

}  // namespace
}  // namespace lockstep::controller
