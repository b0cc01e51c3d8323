// Elastic jobs: the attempt's size (AttemptWorkers) and when to change it (DecideResize), then
// one resize through ComputePlan.
#include "operator/controller/elastic_policy.h"

#include <gtest/gtest.h>

#include <functional>

// Table rows leave their trailing expectation fields at the defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;
using testing::InAttempt;
using testing::Pod;
using testing::T0;

// An elastic 8-worker job (minReplicas 4) on its attempt 1, restarted at T0.
api::TrainingJob Elastic() {
  api::TrainingJob job = testing::Job(8).job;
  job.spec.elastic = api::ElasticPolicy{4, 8, 60};
  job.status.attempt = 1;
  job.status.last_restart = api::LastRestart{T0(), "NodeLeaseExpired", "m", 1, 0,
                                             api::RestartMode::kRecreate, {}};
  return job;
}

api::Capacity Capacity(int32_t feasible, int offset_s = 1) {
  return api::Capacity{feasible, T0() + seconds(offset_s)};
}

PodCounts Waiting(int32_t existing) {  // pods created, none bound
  PodCounts c;
  c.existing = existing;
  return c;
}

PodCounts RunningGang(int32_t n) {
  PodCounts c;
  c.existing = c.bound = c.running = c.ready = c.workers = n;
  return c;
}

struct Case {
  std::string name;
  std::function<void(api::TrainingJob&)> job;  // edits Elastic()
  PodCounts counts;
  std::optional<int> running_for_s;  // the gang runs since now - this
  // Expectations.
  std::optional<int32_t> size;
  std::string reason;
  std::optional<int> recheck_s;
};

std::vector<Case> Cases() {
  auto size = [](int32_t replicas, std::optional<api::Capacity> capacity) {
    return [replicas, capacity](api::TrainingJob& j) {
      j.status.replicas = replicas;
      j.status.capacity = capacity;
    };
  };
  return {
      {"a fixed-size job never resizes",
       [](api::TrainingJob& j) {
         j.spec.elastic.reset();
         j.status.capacity = Capacity(2);
       },
       Waiting(8)},
      {"kubectl scale below the size shrinks to spec.replicas",
       [](api::TrainingJob& j) {
         j.status.replicas = 8;
         j.spec.replicas = 6;
       },
       RunningGang(8), 100, 6, "Scaled"},
      {"no capacity figure: nothing", size(8, std::nullopt), Waiting(8)},
      {"a waiting gang restarts at the feasible size", size(8, Capacity(6)), Waiting(8),
       std::nullopt, 6, "ElasticScaleDown"},
      {"a gang with no pods yet counts as waiting", size(8, Capacity(5)), Waiting(0),
       std::nullopt, 5, "ElasticScaleDown"},
      {"an unsized job starts from spec.replicas", size(0, Capacity(6)), Waiting(8),
       std::nullopt, 6, "ElasticScaleDown"},
      {"partly bound still waits",
       size(8, Capacity(6)),
       [] {
         PodCounts c = Waiting(8);
         c.bound = 5;
         return c;
       }(),
       std::nullopt, 6, "ElasticScaleDown"},
      {"below minReplicas is never used", size(8, Capacity(3)), Waiting(8)},
      {"exactly minReplicas is used", size(8, Capacity(4)), Waiting(8), std::nullopt, 4,
       "ElasticScaleDown"},
      {"capacity older than the last restart is ignored", size(8, Capacity(6, -1)), Waiting(8)},
      {"a fully bound gang does not shrink", size(8, Capacity(6)), RunningGang(8)},
      {"a feasible size equal to the size changes nothing", size(6, Capacity(6)), Waiting(6)},
      {"a running gang below spec.replicas grows after the cool-down", size(6, Capacity(8)),
       RunningGang(6), 60, 8, "ElasticScaleUp"},
      {"growth goes to what fits, not further", size(5, Capacity(7)), RunningGang(5), 120, 7,
       "ElasticScaleUp"},
      {"growth waits for the cool-down and asks for a recheck", size(6, Capacity(8)),
       RunningGang(6), 20, std::nullopt, "", 40},
      {"a custom cool-down",
       [size](api::TrainingJob& j) {
         size(6, Capacity(8))(j);
         j.spec.elastic->grow_cooldown_seconds = 0;
       },
       RunningGang(6), 0, 8, "ElasticScaleUp"},
      {"a gang that does not run does not grow", size(6, Capacity(8)), Waiting(6)},
      {"stale capacity does not grow a gang", size(6, Capacity(8, -5)), RunningGang(6), 600},
      {"a gang at spec.replicas does not grow", size(8, Capacity(8)), RunningGang(8), 600},
  };
}

class ElasticPolicyTest : public ::testing::TestWithParam<Case> {};

TEST_P(ElasticPolicyTest, Decides) {
  const Case& tc = GetParam();
  api::TrainingJob job = Elastic();
  tc.job(job);
  const api::Time now = T0() + seconds(1000);
  std::optional<api::Time> since;
  if (tc.running_for_s) since = now - seconds(*tc.running_for_s);
  const ResizeCheck check = DecideResize(job, tc.counts, since, now);
  if (tc.size) {
    ASSERT_TRUE(check.resize.has_value());
    EXPECT_EQ(check.resize->size, *tc.size);
    EXPECT_EQ(check.resize->reason, tc.reason);
    EXPECT_FALSE(check.resize->message.empty());
  } else {
    EXPECT_FALSE(check.resize.has_value()) << check.resize->reason;
  }
  if (tc.recheck_s) {
    ASSERT_TRUE(check.recheck_after.has_value());
    EXPECT_EQ(check.recheck_after->count(), *tc.recheck_s);
  } else {
    EXPECT_FALSE(check.recheck_after.has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ElasticPolicyTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string n;
                           for (char ch : param_info.param.name) n += std::isalnum(ch) ? ch : '_';
                           return n;
                         });

TEST(ElasticPolicyTest, AttemptWorkers) {
  api::TrainingJob job = Elastic();
  job.spec.elastic.reset();
  job.status.replicas = 3;
  EXPECT_EQ(AttemptWorkers(job), 8);  // fixed size: spec.replicas
  job = Elastic();
  job.status.replicas = 0;
  EXPECT_EQ(AttemptWorkers(job), 8);  // not chosen yet
  job.status.replicas = 6;
  EXPECT_EQ(AttemptWorkers(job), 6);
  job.status.replicas = 2;
  EXPECT_EQ(AttemptWorkers(job), 4);  // never below minReplicas
  job.status.replicas = 8;
  job.spec.replicas = 5;
  EXPECT_EQ(AttemptWorkers(job), 5);  // never above spec.replicas
}

// The pass's table (plan.h): a scale-down claims the pass at step Resize.
TEST(ElasticPlanTest, AScaleDownClaimsThePassAtStepResize) {
  CachedJob cached = testing::Job(8);
  cached.job.spec.elastic = api::ElasticPolicy{4, 8, 60};
  cached.job.status.start_time = T0();
  cached.job.status.capacity = Capacity(6);
  std::vector<kube::Pod> pods;
  for (int i = 0; i < 8; ++i) pods.push_back(InAttempt(Pod("worker", i, "Pending", ""), 0));
  const Plan plan = ComputePlan(cached, Observed{pods, true, {}}, T0() + seconds(5), true,
                                PlanOptions{"launcher:test", seconds(300)});
  EXPECT_EQ(plan.decided_by, "Resize");
}

// Through ComputePlan: capacity for 6 of 8 -> a restart at 6 that costs no budget and waits for
// no backoff, then 6 pods of the next attempt.
TEST(ElasticPlanTest, ScaleDownRestartsAtTheFeasibleSize) {
  CachedJob cached = testing::Job(8);
  cached.job.spec.elastic = api::ElasticPolicy{4, 8, 60};
  cached.job.status.start_time = T0();
  cached.job.status.attempt = 1;
  cached.job.status.last_restart =
      api::LastRestart{T0(), "NodeLeaseExpired", "m", 1, 0,
                       api::RestartMode::kRecreate, {"node-9"}};
  cached.job.status.restarts = {0, 1, 0};
  cached.job.status.capacity = Capacity(6);
  std::vector<kube::Pod> pods;
  for (int i = 0; i < 8; ++i) pods.push_back(InAttempt(Pod("worker", i, "Pending", ""), 1));
  const PlanOptions options{"launcher:test", seconds(300)};
  Plan plan = ComputePlan(cached, Observed{pods, true, {}}, T0() + seconds(5), true, options);
  EXPECT_EQ(plan.status.attempt, 2);
  EXPECT_EQ(plan.status.replicas, 6);
  EXPECT_EQ(plan.status.restarts.failures, 0);
  EXPECT_EQ(plan.status.restarts.disruptions, 1);
  EXPECT_EQ(plan.status.restarts.consecutive, 0);
  EXPECT_EQ(plan.status.last_restart->reason, "ElasticScaleDown");
  EXPECT_EQ(plan.status.last_restart->backoff_seconds, 0);
  EXPECT_EQ(plan.pod_deletes.size(), 8u);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Normal");
  EXPECT_EQ(plan.events[0].reason, "ElasticScaleDown");
  EXPECT_NE(plan.events[0].message.find("with 6 workers"), std::string::npos);

  // The old pods gone: 6 pods of attempt 2; the old capacity figure is stale now.
  cached.job.status = plan.status;
  plan = ComputePlan(cached, Observed{{}, true, {}}, T0() + seconds(8), true, options);
  EXPECT_EQ(plan.status.attempt, 2);
  ASSERT_EQ(plan.pod_creates.size(), 6u);
  EXPECT_EQ(plan.status.replicas, 6);
}

}  // namespace
}  // namespace lockstep::controller
