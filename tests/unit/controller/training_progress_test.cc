// status.progress (training_progress.h): the pure step from the launchers' latest report, the
// progress written and the clock to the progress to write; and the same through ComputePlan.
#include "operator/controller/training_progress.h"

#include <gtest/gtest.h>

#include "operator/api/codec.h"
#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::T0;

protocol::TrainingProgress Report(uint64_t step, uint64_t total = 0, uint64_t sps_milli = 0) {
  return protocol::TrainingProgress{step, total, sps_milli, 0};
}

protocol::TrainingProgress Checkpointed(protocol::TrainingProgress r, uint64_t checkpoint) {
  r.checkpoint_step = checkpoint;
  return r;
}

api::JobProgress Written(int64_t step, std::optional<int64_t> total, api::Time at) {
  api::JobProgress p;
  p.step = step;
  p.total_steps = total;
  if (total) p.percent = static_cast<int32_t>(100 * step / *total);
  p.last_update = at;
  return p;
}

TEST(NextProgressTest, Table) {
  struct Case {
    std::string name;
    std::optional<protocol::TrainingProgress> reported;
    std::optional<api::JobProgress> written;
    api::Time now;
    std::optional<api::JobProgress> want;
  };
  const api::Time t = T0();
  const api::JobProgress w100 = Written(100, 1000, t);
  auto with = [](api::JobProgress p, auto f) {
    f(p);
    return p;
  };
  const std::vector<Case> cases = {
      {"no report, nothing written", std::nullopt, std::nullopt, t, std::nullopt},
      {"no report keeps what was written (launchers gone, job finished)", std::nullopt, w100,
       t + seconds(60), w100},
      {"the first report is written at once, without an eta", Report(100, 1000, 812500),
       std::nullopt, t + milliseconds(1500),
       with(Written(100, 1000, t + seconds(1)), [](auto& p) { p.samples_per_second = 812.5; })},
      {"within the write interval nothing changes", Report(150, 1000), w100, t + seconds(9), w100},
      {"after it, the new step with the eta from the step rate", Report(200, 1000), w100,
       t + seconds(10),
       // 100 steps in 10 s: 800 left take 80 s.
       with(Written(200, 1000, t + seconds(10)), [](auto& p) { p.eta_seconds = 80; })},
      {"the eta rounds up", Report(107, 1000), w100, t + seconds(10),
       // 0.7 steps/s, 893 left: 1275.7 s.
       with(Written(107, 1000, t + seconds(10)), [](auto& p) { p.eta_seconds = 1276; })},
      {"the same report is no change: lastUpdate says when progress last moved", Report(100, 1000),
       w100, t + seconds(300), w100},
      {"a step that went back (resumed from a checkpoint) has no eta", Report(50, 1000), w100,
       t + seconds(20), Written(50, 1000, t + seconds(20))},
      {"without totalSteps: no percent, no eta", Report(7), std::nullopt, t,
       Written(7, std::nullopt, t)},
      {"finished: percent 100, eta 0", Report(1000, 1000), w100, t + seconds(30),
       with(Written(1000, 1000, t + seconds(30)), [](auto& p) { p.eta_seconds = 0; })},
      {"past totalSteps: percent stays 100", Report(1500, 1000), std::nullopt, t,
       with(Written(1500, 1000, t),
            [](auto& p) {
              p.percent = 100;
              p.eta_seconds = 0;
            })},
      {"percent is the floor", Report(999, 1000), std::nullopt, t,
       with(Written(999, 1000, t), [](auto& p) { p.percent = 99; })},
      {"the final report is written within the interval", Report(1000, 1000), w100,
       t + seconds(2), with(Written(1000, 1000, t + seconds(2)), [](auto& p) {
         p.eta_seconds = 0;
       })},
      {"steps beyond int64 saturate", Report(UINT64_MAX), std::nullopt, t,
       Written(INT64_MAX, std::nullopt, t)},
      {"the checkpoint step is carried, saturating",
       Checkpointed(Report(500), UINT64_MAX), std::nullopt, t,
       with(Written(500, std::nullopt, t), [](auto& p) { p.checkpoint_step = INT64_MAX; })},
      {"a new checkpoint step alone is a new report",
       Checkpointed(Report(100, 1000), 100), w100, t + seconds(10),
       with(Written(100, 1000, t + seconds(10)), [](auto& p) { p.checkpoint_step = 100; })},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const bool final = c.name.find("final report") != std::string::npos;
    EXPECT_EQ(NextProgress(c.reported, c.written, c.now, final), c.want);
  }
}

TEST(NextProgressTest, WritesAtMostOncePerIntervalWhateverTheReportRate) {
  std::optional<api::JobProgress> written;
  int writes = 0;
  for (int ms = 0; ms <= 60'000; ms += 250) {  // a report every 250 ms, one step each
    std::optional<api::JobProgress> next = NextProgress(
        Report(static_cast<uint64_t>(ms / 250), 10'000), written, T0() + milliseconds(ms));
    if (next != written) ++writes;
    written = next;
  }
  EXPECT_EQ(writes, 7);  // at 0, 10, ..., 60 s
  EXPECT_EQ(written->step, 240);
}

TEST(ProgressRatioTest, StepOverTotalAtMostOne) {
  EXPECT_EQ(ProgressRatio(Written(250, 1000, T0())), 0.25);
  EXPECT_EQ(ProgressRatio(Written(2000, 1000, T0())), 1.0);
  EXPECT_EQ(ProgressRatio(Written(5, std::nullopt, T0())), std::nullopt);
}

TEST(ProgressCodecTest, RoundTripsThroughTheStatus) {
  api::TrainingJobStatus s;
  api::JobProgress p = Written(200, 1000, T0());
  p.samples_per_second = 812.5;
  p.eta_seconds = 80;
  p.checkpoint_step = 150;
  s.progress = p;
  const nlohmann::json encoded = api::EncodeStatus(s);
  EXPECT_EQ(encoded["progress"],
            nlohmann::json::parse(R"({"step": 200, "totalSteps": 1000, "percent": 20,
              "samplesPerSecond": 812.5, "etaSeconds": 80, "checkpointStep": 150,
              "lastUpdate": "2027-01-15T08:00:00Z"})"));
  StatusOr<api::TrainingJobStatus> back = api::DecodeStatus(encoded);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->progress, p);
  nlohmann::json bad = encoded;
  bad["progress"]["samplesPerSecond"] = -1;
  EXPECT_FALSE(api::DecodeStatus(bad).ok());
}

// Through ComputePlan: a running job whose launchers report progress gets status.progress.
TEST(TrainingProgressPlanTest, ARunningJobsReportLandsInStatus) {
  CachedJob job = testing::Job(2);
  job.job.status.start_time = T0();
  std::vector<kube::Pod> pods = {testing::Pod("worker", 0, "Running"),
                                 testing::Pod("worker", 1, "Running")};
  pods[0].pod_ip = "10.0.0.10";
  pods[1].pod_ip = "10.0.0.11";
  LauncherObservation obs;
  obs.pod_uid = "pod-uid-worker0";
  obs.answered = true;
  obs.status.running = true;
  obs.status.progress = Report(30, 120, 64000);
  Observed observed{pods, true, {}, obs};
  const Plan plan = ComputePlan(job, observed, T0() + seconds(5), true,
                                PlanOptions{"launcher:test", seconds(300)});
  ASSERT_TRUE(plan.status.progress.has_value());
  EXPECT_EQ(plan.status.progress->step, 30);
  EXPECT_EQ(plan.status.progress->percent, 25);
  EXPECT_EQ(plan.status.progress->samples_per_second, 64.0);
  EXPECT_TRUE(plan.launcher_poll.has_value());
  // An unanswered poll keeps what was written.
  obs.answered = false;
  job.job.status = plan.status;
  Observed silent{pods, true, {}, obs};
  EXPECT_EQ(
      ComputePlan(job, silent, T0() + seconds(60), true, PlanOptions{"launcher:test", seconds(300)})
          .status.progress,
      plan.status.progress);
}

// The pass that records success writes node 0's final report from its termination message,
// even within the write interval.
TEST(TrainingProgressPlanTest, ASucceededJobShowsTheFinalStepFromNodeZerosTerminationMessage) {
  CachedJob job = testing::Job(2);
  job.job.status.start_time = T0();
  job.job.status.progress = Written(900, 1000, T0());
  std::vector<kube::Pod> pods = {testing::Pod("worker", 0, "Succeeded"),
                                 testing::Pod("worker", 1, "Succeeded")};
  for (kube::Pod& p : pods) {
    kube::ContainerStatus c;
    c.name = "trainer";
    c.state = "terminated";
    c.exit_code = 0;
    p.container_statuses.push_back(c);
  }
  pods[0].container_statuses[0].message =
      R"({"reason":"succeeded","stderrTail":[],"version":2,)"
      R"("progress":{"step":1000,"totalSteps":1000,"samplesPerSecondMilli":64000}})";
  // Node 1's message says nothing about progress (only node 0's file is read).
  pods[1].container_statuses[0].message = R"({"reason":"succeeded","stderrTail":[]})";
  Observed observed{pods, true, {}};
  const Plan plan = ComputePlan(job, observed, T0() + seconds(3), true,
                                PlanOptions{"launcher:test", seconds(300)});
  EXPECT_EQ(plan.status.state, api::JobState::kSucceeded);
  ASSERT_TRUE(plan.status.progress.has_value());
  EXPECT_EQ(plan.status.progress->step, 1000);
  EXPECT_EQ(plan.status.progress->percent, 100);
  EXPECT_EQ(plan.status.progress->eta_seconds, 0);
  EXPECT_EQ(plan.status.progress->samples_per_second, 64.0);
}

}  // namespace
}  // namespace lockstep::controller
