// Two operators with leader election; the leader is SIGKILLed while it places a round of gangs,
// as soon as some gang is seen partly placed. A gang gets its nodes one of two ways, one test each:
//   - bound: pods created unplaced and bound by the gang scheduler (--create-placed=false), at 4
//     binds a second, so the kill lands mid-bind;
//   - created placed (the default): every pod created with spec.nodeName, at 4 requests a second
//     (--qps=4), so the kill lands with part of a gang created. Without the low rate a gang's
//     creates take milliseconds and the kill would only sometimes find one partly placed.
// The standby takes over and every gang ends placed whole, no node's GPUs held twice.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "tests/chaos/chaos_env.h"

namespace lockstep::chaos {
namespace {

constexpr int kGangsPerRound = 6, kReplicas = 6;

// Bound pods per job of the namespace, and how many jobs are bound partly (some, not all).
struct Binding {
  std::map<std::string, int> bound;
  int partial = 0;
  int total = 0;
};

Binding ReadBinding(kube::RestClient& client, const std::string& ns,
                    const std::vector<std::string>& jobs) {
  Binding b;
  for (const std::string& job : jobs) {
    int bound = 0;
    for (const json& pod : JobPods(client, ns, job)) {
      bound += pod.value("/spec/nodeName"_json_pointer, "").empty() ? 0 : 1;
    }
    b.bound[job] = bound;
    b.total += bound;
    if (bound > 0 && bound < kReplicas) ++b.partial;
  }
  return b;
}

class SchedulerFailoverChaosTest : public ChaosTest {
 protected:
  // `figure`: the CHAOS-FIGURE's name (and the namespace's, after "chaos-"); `rate_flags`: what
  // slows the placing down; `how`: the figure's words for the kill.
  void KillLeadersWhilePlacing(const std::string& figure, const std::vector<std::string>& rate_flags,
                               const std::string& how);
};

void SchedulerFailoverChaosTest::KillLeadersWhilePlacing(
    const std::string& figure, const std::vector<std::string>& rate_flags, const std::string& how) {
  const Scale scale = ChaosScale();
  ASSERT_NO_FATAL_FAILURE(
      Prepare("chaos-" + figure, (scale.failover_rounds * kGangsPerRound * kReplicas + 7) / 8));
  kube::RestClient& client = this->client();

  std::vector<std::string> args = {"--gang-scheduler=true", "--leader-elect",
                                   "--leader-election-namespace=" + ns()};
  args.insert(args.end(), rate_flags.begin(), rate_flags.end());
  std::vector<std::unique_ptr<OperatorProcess>> ops;
  for (int i = 0; i < 2; ++i) {
    ops.push_back(std::make_unique<OperatorProcess>(std::vector<std::string>{ns()}, args));
    ASSERT_TRUE(ops.back()->Start().ok());
    ASSERT_TRUE(ops.back()->WaitReady(seconds(60))) << ops.back()->log_path();
  }

  std::vector<std::string> jobs;
  int partial_at_kills = 0, bound_at_kills = 0;
  for (int round = 0; round < scale.failover_rounds; ++round) {
    OperatorProcess* leader = nullptr;
    ASSERT_TRUE(kube::testing::WaitFor(
        [&] {
          for (auto& op : ops) {
            if (LeaderStatus(op->metrics_port()) == 1) leader = op.get();
          }
          return leader != nullptr;
        },
        seconds(60)));
    std::vector<std::string> round_jobs;
    for (int i = 0; i < kGangsPerRound; ++i) {
      const std::string job = "r" + std::to_string(round) + "-gang-" + std::to_string(i);
      ASSERT_TRUE(
          client.Create(kube::resources::TrainingJobs(), ns(), ChaosJob(job, kReplicas, pool()))
              .ok());
      round_jobs.push_back(job);
    }
    Binding at_kill;
    ASSERT_TRUE(kube::testing::WaitFor(
        [&] {
          at_kill = ReadBinding(client, ns(), round_jobs);
          return at_kill.partial > 0;
        },
        seconds(60), milliseconds(20)))
        << "no gang was ever seen partly placed; log " << leader->log_path();
    leader->Kill(SIGKILL);
    partial_at_kills += at_kill.partial;
    bound_at_kills += at_kill.total;
    ASSERT_TRUE(leader->Start().ok());  // back as the standby
    jobs.insert(jobs.end(), round_jobs.begin(), round_jobs.end());
    for (const std::string& job : jobs) {
      EXPECT_TRUE(kube::testing::WaitFor(
          [&] {
            StatusOr<json> j = client.Get(kube::resources::TrainingJobs(), ns(), job);
            return j.ok() &&
                   !RunningAttempt(JobPods(client, ns(), job), Attempt(*j), kReplicas).empty();
          },
          seconds(120), milliseconds(250)))
          << job << " never ran whole after the failover";
    }
  }
  // Whole gangs only, once the new leader settled: every job's pods are all bound.
  const Binding end = ReadBinding(client, ns(), jobs);
  EXPECT_EQ(end.partial, 0);
  const PodCreations pods = CheckHistory();
  Figure(figure,
         std::to_string(scale.failover_rounds) + " leaders SIGKILLed " + how + " (" +
             std::to_string(partial_at_kills) + " gangs partly bound, " +
             std::to_string(bound_at_kills) + " pods bound at the kills); " +
             std::to_string(jobs.size()) + " gangs of " + std::to_string(kReplicas) + ", " +
             std::to_string(end.partial) + " partly bound at the end, " +
             std::to_string(pods.seen) + " pods created");
  for (auto& op : ops) {
    op->Kill(SIGTERM);
    EXPECT_EQ(op->last_exit(), 0) << op->log_path();
  }
}

// 4 binds a second: a round's 36 pods take about 9 s to bind.
TEST_F(SchedulerFailoverChaosTest, KillingTheLeaderMidBindLeavesNoGpuHeldTwiceAndNoPartialGang) {
  KillLeadersWhilePlacing("failover",
                          {"--create-placed=false", "--scheduler-qps=4", "--scheduler-burst=1"},
                          "mid-bind");
}

// 4 requests a second for the controller's client (the leader's Lease has a client of its own):
// a gang's 6 creates take about 1.5 s, and its Secret, Service and status writes queue with them.
TEST_F(SchedulerFailoverChaosTest, KillingTheLeaderMidCreatePlacedLeavesNoPartialGang) {
  KillLeadersWhilePlacing("failover-placed", {"--create-placed=true", "--qps=4", "--burst=1"},
                          "with a gang partly created placed");
}

}  // namespace
}  // namespace lockstep::chaos
