// status.goodput (goodput.h): which account a status charges, the fold from the stored status to
// the planned one, the recomputed steps of a restart, hostile stored values, and ComputePlan
// writing it only with a status write it makes anyway.
#include "operator/controller/goodput.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "operator/api/conditions.h"
#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using api::JobState;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::T0;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

api::Condition Cond(std::string_view type, bool value, api::Time at) {
  api::Condition c;
  c.type = std::string(type);
  c.status = value ? api::ConditionStatus::kTrue : api::ConditionStatus::kFalse;
  c.last_transition_time = at;
  return c;
}

api::TrainingJobStatus State(JobState state, std::string reason = "") {
  api::TrainingJobStatus s;
  s.state = state;
  s.reason = std::move(reason);
  return s;
}

api::TrainingJobStatus Running(api::Time since) {
  api::TrainingJobStatus s = State(JobState::kRunning, "AllPodsRunning");
  s.conditions.push_back(Cond(api::kConditionRunning, true, since));
  return s;
}

api::TrainingJobStatus Restarting(api::Time at, std::string cause) {
  api::TrainingJobStatus s = State(JobState::kRestarting, "WaitingForScheduler");
  s.conditions.push_back(Cond(api::kConditionRestarting, true, at));
  s.last_restart = api::LastRestart{at, std::move(cause), "", 1, 0, std::nullopt, {}};
  return s;
}

api::JobProgress Progress(int64_t step, api::Time at, std::optional<int64_t> checkpoint = {}) {
  api::JobProgress p;
  p.step = step;
  p.checkpoint_step = checkpoint;
  p.last_update = at;
  return p;
}

api::JobGoodput Account(api::Time at, int64_t productive = 0, int64_t placement = 0,
                        int64_t startup = 0) {
  api::JobGoodput g;
  g.productive_seconds = productive;
  g.placement_seconds = placement;
  g.startup_seconds = startup;
  g.updated_at = at;
  return g;
}

template <typename T, typename F>
T With(T v, F f) {
  f(v);
  return v;
}

TEST(ClassifyGoodputTest, Table) {
  struct Case {
    std::string name;
    api::TrainingJobStatus status;
    GoodputCharge want;
  };
  const api::Time t = T0();
  const std::vector<Case> cases = {
      {"never written: waiting for the operator's first pass",
       {},
       {GoodputAccount::kPlacement, ""}},
      {"creating pods",
       State(JobState::kPending, "CreatingPods"),
       {GoodputAccount::kPlacement, ""}},
      {"waiting for the gang scheduler",
       State(JobState::kScheduling, "WaitingForScheduler"),
       {GoodputAccount::kPlacement, ""}},
      {"queued by Kueue", State(JobState::kQueued, "Pending"), {GoodputAccount::kPlacement, ""}},
      {"bound, containers starting",
       State(JobState::kScheduling, "StartingPods"),
       {GoodputAccount::kStartup, ""}},
      {"a pod that cannot start is still starting",
       With(State(JobState::kScheduling, "ImagePullBackOff"),
            [&](auto& s) { s.conditions.push_back(Cond("StartupFailing", true, t)); }),
       {GoodputAccount::kStartup, ""}},
      {"running", Running(t), {GoodputAccount::kProductive, ""}},
      {"restarting, by the restart's reason",
       Restarting(t, "NodeLost"),
       {GoodputAccount::kRecovery, "NodeLost"}},
      {"a restarted gang starting its pods is still recovering",
       With(Restarting(t, "PodFailed"),
            [](auto& s) {
              s.state = JobState::kScheduling;
              s.reason = "StartingPods";
            }),
       {GoodputAccount::kRecovery, "PodFailed"}},
      {"restarting without a recorded restart",
       State(JobState::kRestarting),
       {GoodputAccount::kRecovery, "Unknown"}},
      {"suspended: not charged", State(JobState::kSuspended), {}},
      {"succeeded: not charged", State(JobState::kSucceeded), {}},
      {"failed: not charged", State(JobState::kFailed), {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClassifyGoodput(c.status), c.want) << c.name;
  }
}

TEST(NextGoodputTest, Table) {
  struct Case {
    std::string name;
    api::TrainingJobStatus stored;
    api::TrainingJobStatus planned;
    api::Time now;
    std::optional<api::JobGoodput> want;  // ratio and percent are checked apart
  };
  const api::Time t = T0();
  auto with_goodput = [](api::TrainingJobStatus s, api::JobGoodput g) {
    s.goodput = g;
    return s;
  };
  auto with_progress = [](api::TrainingJobStatus s, api::JobProgress p) {
    s.progress = p;
    return s;
  };
  auto stepped = [](api::JobGoodput g, double step_seconds) {
    g.step_seconds = step_seconds;
    return g;
  };
  auto recovered = [](api::JobGoodput g, std::vector<api::GoodputCause> causes) {
    for (const api::GoodputCause& c : causes) g.recovery_seconds += c.seconds;
    g.recovery_by_cause = std::move(causes);
    return g;
  };
  const api::TrainingJobStatus running = Running(t);
  const std::vector<Case> cases = {
      {"a job never written waited since its creation (whole seconds)",
       {},
       State(JobState::kPending, "CreatingPods"),
       t + milliseconds(5900),
       Account(t + seconds(5), 0, 5)},
      {"a status written before goodput existed starts its account now", Running(t),
       With(Running(t), [&](auto& s) { s.progress = Progress(10, t + seconds(50)); }),
       t + seconds(50), Account(t + seconds(50))},
      {"a status written before goodput existed, nothing changes: no account, no write", Running(t),
       Running(t), t + seconds(50), std::nullopt},
      {"a job that finished before goodput existed gets no account", State(JobState::kSucceeded),
       State(JobState::kSucceeded), t + seconds(50), std::nullopt},
      {"nothing changes: the stored account stands, no write", with_goodput(running, Account(t, 3)),
       with_goodput(running, Account(t, 3)), t + seconds(40), Account(t, 3)},
      {"placement ends when the pods are bound",
       with_goodput(State(JobState::kScheduling, "WaitingForScheduler"), Account(t, 0, 2)),
       State(JobState::kScheduling, "StartingPods"), t + seconds(7), Account(t + seconds(7), 0, 9)},
      {"startup ends when the gang runs",
       with_goodput(State(JobState::kScheduling, "StartingPods"), Account(t, 0, 9)),
       Running(t + seconds(4)), t + seconds(4), Account(t + seconds(4), 0, 9, 4)},
      {"running with new progress: productive, and the step time between two writes",
       with_goodput(with_progress(running, Progress(100, t + seconds(10))),
                    Account(t + seconds(10), 10)),
       with_progress(running, Progress(300, t + seconds(20))), t + seconds(20),
       stepped(Account(t + seconds(20), 20), 0.05)},
      {"no step time across the gang's start (the first write came before it ran)",
       with_goodput(with_progress(Running(t + seconds(15)), Progress(100, t + seconds(10))),
                    Account(t + seconds(15), 5)),
       with_progress(Running(t + seconds(15)), Progress(300, t + seconds(20))), t + seconds(20),
       Account(t + seconds(20), 10)},
      {"a restart moves the steps since the checkpoint to recompute",
       with_goodput(with_progress(running, Progress(500, t + seconds(60), 400)),
                    stepped(Account(t + seconds(60), 60), 0.1)),
       Restarting(t + seconds(70), "NodeLost"), t + seconds(70),
       With(stepped(Account(t + seconds(70), 60), 0.1), [](auto& g) { g.recompute_seconds = 10; })},
      {"recompute is at most the productive time",
       with_goodput(with_progress(running, Progress(500, t + seconds(5), 0)),
                    stepped(Account(t + seconds(5), 5), 1.0)),
       Restarting(t + seconds(8), "NodeLost"), t + seconds(8),
       With(stepped(Account(t + seconds(8), 0), 1.0), [](auto& g) { g.recompute_seconds = 8; })},
      {"no checkpointStep reported: no recompute (unknown)",
       with_goodput(with_progress(running, Progress(500, t + seconds(60))),
                    stepped(Account(t + seconds(60), 60), 0.1)),
       Restarting(t + seconds(70), "NodeLost"), t + seconds(70),
       stepped(Account(t + seconds(70), 70), 0.1)},
      {"recovery ends when the gang runs again, charged to the restart's cause",
       with_goodput(Restarting(t + seconds(70), "NodeLost"), Account(t + seconds(70), 70)),
       With(
           Running(t + seconds(95)),
           [&](auto& s) { s.last_restart = Restarting(t + seconds(70), "NodeLost").last_restart; }),
       t + seconds(95), recovered(Account(t + seconds(95), 70), {{"NodeLost", 25}})},
      {"causes stay sorted and add up",
       with_goodput(Restarting(t, "Hang"),
                    recovered(Account(t), {{"NodeLost", 5}, {"PodFailed", 1}})),
       Running(t + seconds(3)), t + seconds(3),
       recovered(Account(t + seconds(3)), {{"Hang", 3}, {"NodeLost", 5}, {"PodFailed", 1}})},
      {"the job's end charges the last interval, then nothing",
       with_goodput(running, Account(t, 3)), State(JobState::kSucceeded, "Succeeded"),
       t + seconds(30), Account(t + seconds(30), 33)},
      {"a finished job charges nothing however late",
       with_goodput(State(JobState::kSucceeded), Account(t, 33)), State(JobState::kSucceeded),
       t + seconds(3000), Account(t, 33)},
      {"suspended time is not charged", with_goodput(State(JobState::kSuspended), Account(t, 3)),
       State(JobState::kPending, "CreatingPods"), t + seconds(600), Account(t + seconds(600), 3)},
      {"stored negatives read as 0",
       with_goodput(State(JobState::kScheduling, "StartingPods"), Account(t, -5, -7, -9)),
       Running(t + seconds(2)), t + seconds(2), Account(t + seconds(2), 0, 0, 2)},
      {"sums saturate",
       with_goodput(State(JobState::kScheduling, "StartingPods"), Account(t, 0, 0, kMax - 1)),
       Running(t + seconds(2)), t + seconds(2), Account(t + seconds(2), 0, 0, kMax)},
      {"an updatedAt in the future charges nothing",
       with_goodput(State(JobState::kScheduling, "StartingPods"), Account(t + seconds(100), 0, 1)),
       Running(t + seconds(2)), t + seconds(2), Account(t + seconds(2), 0, 1)},
      {"a stored step time that is not a positive number is dropped",
       with_goodput(with_progress(running, Progress(500, t, 400)),
                    stepped(Account(t, 60), std::nan(""))),
       Restarting(t + seconds(10), "NodeLost"), t + seconds(10), Account(t + seconds(10), 70)},
  };
  for (const Case& c : cases) {
    std::optional<api::JobGoodput> got = NextGoodput(c.stored, c.planned, T0(), c.now);
    ASSERT_EQ(got.has_value(), c.want.has_value()) << c.name;
    if (!got) continue;
    api::JobGoodput want = *c.want;
    if (c.stored.goodput && *c.stored.goodput == want) {
      EXPECT_EQ(*got, want) << c.name;  // untouched, ratio included
      continue;
    }
    got->ratio = 0;
    got->percent = 0;
    if (got->step_seconds && want.step_seconds) {
      EXPECT_NEAR(*got->step_seconds, *want.step_seconds, 1e-9) << c.name;
      got->step_seconds = want.step_seconds;
    }
    EXPECT_EQ(*got, want) << c.name << ": productive " << got->productive_seconds << " placement "
                          << got->placement_seconds << " startup " << got->startup_seconds
                          << " recovery " << got->recovery_seconds << " recompute "
                          << got->recompute_seconds;
  }
}

TEST(NextGoodputTest, RatioIsProductiveOverAccountedAndFloorsThePercent) {
  const api::Time t = T0();
  api::TrainingJobStatus stored = State(JobState::kScheduling, "StartingPods");
  stored.goodput = Account(t, 0, 1);
  stored.goodput->recompute_seconds = 1;
  stored.goodput->recovery_seconds = 1;
  stored.goodput->recovery_by_cause = {{"Hang", 1}};
  // startup 2: 0 productive of 5.
  std::optional<api::JobGoodput> g = NextGoodput(stored, Running(t), T0(), t + seconds(2));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ratio, 0.0);
  EXPECT_EQ(g->percent, 0);
  api::TrainingJobStatus run = Running(t);
  run.goodput = Account(t, 2, 1);  // 2 + 4 productive of 7 accounted
  g = NextGoodput(run, State(JobState::kSucceeded), T0(), t + seconds(4));
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->ratio, 6.0 / 7.0);
  EXPECT_EQ(g->percent, 85);
}

TEST(NextGoodputTest, CausesAreBoundedWithTheRestAsOther) {
  const api::Time t = T0();
  api::JobGoodput g = Account(t);
  for (size_t i = 0; i + 1 < kMaxGoodputCauses; ++i) {
    g.recovery_by_cause.push_back({"C" + std::to_string(100 + i), 1});
  }
  g.recovery_seconds = static_cast<int64_t>(kMaxGoodputCauses - 1);
  api::TrainingJobStatus stored = Restarting(t, "Brand-new");
  stored.goodput = g;
  std::optional<api::JobGoodput> got = NextGoodput(stored, Running(t), T0(), t + seconds(4));
  ASSERT_TRUE(got);
  ASSERT_EQ(got->recovery_by_cause.size(), kMaxGoodputCauses);
  EXPECT_EQ(got->recovery_by_cause.back().cause, "Other");
  EXPECT_EQ(got->recovery_by_cause.back().seconds, 4);
  // A stored list longer than the bound (written by someone else) is cut to it.
  stored.goodput->recovery_by_cause.resize(40, {"Z", 1});
  got = NextGoodput(stored, Running(t), T0(), t + seconds(4));
  ASSERT_TRUE(got);
  EXPECT_LE(got->recovery_by_cause.size(), kMaxGoodputCauses);
}

// The fold reads only the stored status: a pass repeated after a failed write (or by a new
// operator) charges the same interval once, never twice.
TEST(NextGoodputTest, RepeatedFromTheSameStoredStatusChargesOnce) {
  const api::Time t = T0();
  api::TrainingJobStatus stored = State(JobState::kScheduling, "StartingPods");
  stored.goodput = Account(t, 0, 3);
  const std::optional<api::JobGoodput> first =
      NextGoodput(stored, Running(t + seconds(5)), T0(), t + seconds(5));
  const std::optional<api::JobGoodput> again =
      NextGoodput(stored, Running(t + seconds(6)), T0(), t + seconds(6));
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->startup_seconds, 5);
  EXPECT_EQ(again->startup_seconds, 6);  // the same interval, a second longer
}

TEST(GoodputAtTest, ChargesTheOpenIntervalToTheStoredAccount) {
  const api::Time t = T0();
  api::TrainingJobStatus s = Running(t);
  EXPECT_FALSE(GoodputAt(s, t).has_value());
  s.goodput = Account(t, 0, 10);
  std::optional<api::JobGoodput> g = GoodputAt(s, t + milliseconds(30'700));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->productive_seconds, 30);
  EXPECT_EQ(g->placement_seconds, 10);
  EXPECT_DOUBLE_EQ(g->ratio, 0.75);
  EXPECT_EQ(g->percent, 75);
}

TEST(GoodputLossesTest, WhatTheWriteAddedToEveryAccountButProductive) {
  const api::Time t = T0();
  api::JobGoodput before = Account(t, 100, 5, 3);
  before.recovery_by_cause = {{"NodeLost", 10}};
  before.recovery_seconds = 10;
  api::JobGoodput after = before;
  after.productive_seconds = 90;  // recompute took 10 of it
  after.recompute_seconds = 10;
  after.placement_seconds = 6;
  after.recovery_by_cause = {{"Hang", 4}, {"NodeLost", 12}};
  after.recovery_seconds = 16;
  EXPECT_EQ(GoodputLosses(before, after), (std::vector<GoodputLoss>{{"placement", "", 1},
                                                                    {"recovery", "Hang", 4},
                                                                    {"recovery", "NodeLost", 2},
                                                                    {"recompute", "", 10}}));
  EXPECT_TRUE(GoodputLosses(after, after).empty());
  // No account before: all of it; shrunk accounts (someone rewrote the status) count nothing.
  EXPECT_EQ(GoodputLosses(std::nullopt, Account(t, 1, 2)),
            (std::vector<GoodputLoss>{{"placement", "", 2}}));
  EXPECT_TRUE(GoodputLosses(after, before).empty());
}

TEST(JobGpusTest, EveryPodsTrainerGpus) {
  api::TrainingJobSpec spec;
  spec.pod_template = nlohmann::json::parse(
      R"({"spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}})");
  spec.roles.push_back(
      api::Role{"ps", 2, std::nullopt,
                nlohmann::json::parse(R"({"spec": {"containers": [{"name": "p"}]}})")});
  EXPECT_EQ(JobGpus(spec, 4), 32);
  EXPECT_EQ(JobGpus(spec, 0), 0);
  spec.roles.front().pod_template = spec.pod_template;
  EXPECT_EQ(JobGpus(spec, 1), 24);
}

// Through ComputePlan: a new job's first pass opens the account; a pass that changes nothing in
// the status leaves it as stored (no write of its own).
TEST(ComputePlanGoodputTest, OpensTheAccountAndAddsNoWriteOfItsOwn) {
  CachedJob job = testing::Job(2);
  Observed observed;
  Plan first = ComputePlan(job, observed, T0() + seconds(3), /*settled=*/true, PlanOptions{});
  ASSERT_TRUE(first.status.goodput.has_value());
  EXPECT_EQ(first.status.goodput->placement_seconds, 3);
  EXPECT_EQ(first.status.goodput->updated_at, T0() + seconds(3));

  job.job.status = first.status;
  Plan second = ComputePlan(job, observed, T0() + seconds(9), /*settled=*/true, PlanOptions{});
  EXPECT_EQ(second.status.goodput, first.status.goodput);
}

}  // namespace
}  // namespace lockstep::controller
