// kube-apiserver and then etcd restarted (hack/cluster.sh restart) while the operator handles
// jobs: restarts of failed gangs in flight during the apiserver's, completions during etcd's.
// Every job must end exactly as the same steps end it without a restart: succeeded, succeeded
// after one restart, or still running its first attempt; and the operator keeps running.
#include <gtest/gtest.h>

#include <thread>

#include "tests/chaos/chaos_env.h"

namespace lockstep::chaos {
namespace {

// What the test does to job i, and so where it must end.
enum class Plan { kSucceed, kFailThenSucceed, kKeepRunning };
Plan PlanOf(int i) { return static_cast<Plan>(i % 3); }
constexpr int kReplicas = 2;

std::string JobName(int i) { return "job-" + std::to_string(i); }

// Retries `write` for as long as the control plane may be restarting.
bool Retry(const std::function<Status()>& write) {
  return kube::testing::WaitFor([&] { return write().ok(); }, seconds(120), milliseconds(500));
}

class ControlPlaneChaosTest : public ChaosTest {
 protected:
  bool WaitRunning(int i, int attempt) {
    return kube::testing::WaitFor([&] { return !Running(i, attempt).empty(); }, seconds(180),
                                  milliseconds(500));
  }
  std::vector<json> Running(int i, int attempt) {
    return RunningAttempt(JobPods(client(), ns(), JobName(i)), attempt, kReplicas);
  }
  // Fails one pod of the job's running `attempt` (the gang restarts), or completes them all.
  bool Finish(int i, int attempt, bool succeeded) {
    for (const json& pod : Running(i, attempt)) {
      const std::string name = pod["metadata"]["name"];
      if (!Retry([&] { return FinishPod(client(), ns(), name, succeeded); })) return false;
      if (!succeeded) return true;
    }
    return true;
  }
};

TEST_F(ControlPlaneChaosTest, JobsEndAsWithoutRestartsWhenTheApiserverAndEtcdRestart) {
  const Scale scale = ChaosScale();
  ASSERT_NO_FATAL_FAILURE(Prepare("chaos-restart", (scale.restart_jobs * kReplicas + 7) / 8 + 1));
  OperatorProcess op({ns()}, {"--gang-scheduler=true"});
  ASSERT_TRUE(op.Start().ok());
  ASSERT_TRUE(op.WaitReady(seconds(60))) << op.ready_answer() << "; log: " << op.log_path();
  const auto started = std::chrono::steady_clock::now();

  const int n = scale.restart_jobs;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        client()
            .Create(kube::resources::TrainingJobs(), ns(), ChaosJob(JobName(i), kReplicas, pool()))
            .ok());
  }
  for (int i = 0; i < n; ++i) ASSERT_TRUE(WaitRunning(i, 0)) << JobName(i) << "; " << op.log_path();

  // 1. Fail one pod of every third job, and restart the apiserver while the operator restarts
  //    those gangs.
  for (int i = 0; i < n; ++i) {
    if (PlanOf(i) == Plan::kFailThenSucceed) {
      ASSERT_TRUE(Finish(i, 0, /*succeeded=*/false));
    }
  }
  ASSERT_TRUE(kube::testing::ClusterScript("restart apiserver").ok());
  for (int i = 0; i < n; ++i) {
    if (PlanOf(i) == Plan::kFailThenSucceed) {
      EXPECT_TRUE(WaitRunning(i, 1)) << JobName(i) << " was not restarted; " << op.log_path();
    }
  }
  // 2. Complete two jobs in three, and restart etcd while the operator finishes them.
  int restarted = 0, completed = 0;
  for (int i = 0; i < n; ++i) {
    if (PlanOf(i) == Plan::kKeepRunning) continue;
    const int attempt = PlanOf(i) == Plan::kFailThenSucceed ? 1 : 0;
    restarted += attempt;
    ++completed;
    ASSERT_TRUE(Finish(i, attempt, /*succeeded=*/true));
  }
  ASSERT_TRUE(kube::testing::ClusterScript("restart etcd").ok());

  for (int i = 0; i < n; ++i) {
    const Plan plan = PlanOf(i);
    const int attempt = plan == Plan::kFailThenSucceed ? 1 : 0;
    json job;
    const bool arrived = kube::testing::WaitFor(
        [&] {
          StatusOr<json> got = client().Get(kube::resources::TrainingJobs(), ns(), JobName(i));
          if (!got.ok()) return false;
          job = std::move(got).value();
          return plan == Plan::kKeepRunning ? !Running(i, 0).empty() && Attempt(job) == 0
                                            : State(job) == "Succeeded";
        },
        seconds(180), milliseconds(500));
    EXPECT_TRUE(arrived) << JobName(i) << ": " << job.dump() << "; " << op.log_path();
    EXPECT_EQ(Attempt(job), attempt) << JobName(i);
    EXPECT_EQ(job.value("/status/restarts/failures"_json_pointer, 0), attempt) << JobName(i);
  }
  EXPECT_FALSE(op.WaitExit(milliseconds(0))) << "the operator exited: " << op.log_path();

  // The recorder's watches broke with each restart; where one could not resume (410 Gone) it
  // re-listed: the versions in between are not in the history (counted as gaps).
  const PodCreations pods = CheckHistory();
  const auto secs =
      std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - started).count();
  Figure("restart", "kube-apiserver and etcd restarted under " + std::to_string(n) + " jobs (" +
                        std::to_string(restarted) + " restarting, " + std::to_string(completed) +
                        " completing); all ended as planned, " + std::to_string(pods.seen) +
                        " pods created, " + std::to_string(history().gaps()) +
                        " watch gaps re-listed, in " + std::to_string(secs) + " s");
  op.Kill(SIGTERM);
  EXPECT_EQ(op.last_exit(), 0) << op.log_path();
}

}  // namespace
}  // namespace lockstep::chaos
