// Hot spares against real launcher processes (docs/launcher.md "Hot spares"): a spare stands
// by, running no children; when a member is lost it takes that node-rank in the next round, its
// children get that node-rank's environment, the others rejoin without charging --max-restarts,
// and Status names the promotion. The last test measures kill -> every rank running again.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "harness.h"
#include "protocol/control_client.h"

namespace lockstep::launcher::testing {
namespace {

using protocol::ControlKind;
using protocol::ControlStatus;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

constexpr char kRunId[] = "spare-test";
constexpr char kToken[] = "spare-token";

// One job's launchers: gang and spares, in a fresh directory on a fresh port.
class Gang {
 public:
  LauncherSpec Spec(int nnodes, int nproc, std::vector<std::string> extra) {
    LauncherSpec s;
    s.args = {"--nnodes", std::to_string(nnodes), "--nproc-per-node", std::to_string(nproc),
              "--rdzv-endpoint", "127.0.0.1:" + std::to_string(port_), "--rdzv-id", kRunId,
              "--advertise-addr", "127.0.0.1", "--join-timeout", "30", "--grace-period", grace_,
              "--framework", "pytorch", "--max-restarts", "0"};
    s.args.insert(s.args.end(), extra.begin(), extra.end());
    s.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path()};
    s.command.insert(s.command.end(), child_args_.begin(), child_args_.end());
    s.env = {{"LOCKSTEP_TOKEN", kToken}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
    return s;
  }
  // `nnodes` gang launchers (node ranks 0..nnodes-1) and `spares` spare launchers.
  void Start(int nnodes, int nproc, int spares, std::vector<std::string> extra = {}) {
    for (int i = 0; i < nnodes; ++i) {
      std::vector<std::string> args = extra;
      args.insert(args.end(), {"--node-rank", std::to_string(i), "--role-index",
                               std::to_string(i)});
      gang_.push_back(std::make_unique<LauncherProcess>(
          Spec(nnodes, nproc, args), dir_.path() + "/launcher." + std::to_string(i) + ".log"));
    }
    for (int k = 0; k < spares; ++k) {
      std::vector<std::string> args = extra;
      args.insert(args.end(), {"--spare", "--role-index", std::to_string(k)});
      spares_.push_back(std::make_unique<LauncherProcess>(
          Spec(nnodes, nproc, args), dir_.path() + "/spare." + std::to_string(k) + ".log"));
    }
  }
  std::string Logs() const {
    std::string out;
    for (const auto& l : gang_) out += l->Log();
    for (const auto& l : spares_) out += l->Log();
    return out;
  }
  protocol::ControlTarget Target() const {
    return {"127.0.0.1", static_cast<uint16_t>(port_), kRunId, kToken};
  }
  StatusOr<ControlStatus> GetStatus() const { return GetControlStatus(Target()); }
  StatusOr<ControlStatus> WaitForStatus(const std::function<bool(const ControlStatus&)>& done,
                                        seconds timeout = seconds(20)) const {
    return WaitForControlStatus(Target(), done, timeout, milliseconds(50));
  }
  static bool PidAlive(const std::string& pid) { return ::kill(std::stoi(pid), 0) == 0; }

  TempDir dir_;
  int port_ = FreePort();
  std::string grace_ = "2";                          // --grace-period
  std::vector<std::string> child_args_ = {"--forever"};
  std::vector<std::unique_ptr<LauncherProcess>> gang_;
  std::vector<std::unique_ptr<LauncherProcess>> spares_;
};

class SpareTest : public ::testing::Test, public Gang {};

TEST_F(SpareTest, ASpareTakesTheLostNodeRankAndItsChildrenGetThatRanksEnvironment) {
  Start(3, 2, 1);
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 6, seconds(30))) << Logs();
  StatusOr<ControlStatus> before = WaitForStatus(
      [](const ControlStatus& s) { return s.running && s.standby_spares == 1; });
  ASSERT_TRUE(before.ok()) << before.status() << Logs();
  EXPECT_EQ(before->standby_spares, 1u) << Logs();
  EXPECT_EQ(before->promotions, 0u);
  EXPECT_EQ(before->members, 3u);
  // The spare runs no trainer: round 0 has exactly the gang's six ranks.
  EXPECT_FALSE(FileExists(dir_.path() + "/env.0.6"));
  std::map<std::string, std::map<std::string, std::string>> round0;
  for (auto& env : ReadEnvFiles(dir_.path(), "0")) round0[env.at("RANK")] = env;

  gang_[2]->Signal(SIGKILL);
  // --max-restarts 0, yet nobody exits: the spare's promotion costs no budget.
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.1.", 6, seconds(20))) << Logs();
  for (const auto& env : ReadEnvFiles(dir_.path(), "1")) {
    const std::string& rank = env.at("RANK");
    EXPECT_EQ(env.at("LOCKSTEP_ATTEMPT"), "1");
    EXPECT_EQ(env.at("WORLD_SIZE"), "6");
    EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), "3");
    const int r = std::stoi(rank);
    EXPECT_EQ(env.at("GROUP_RANK"), std::to_string(r / 2)) << rank;
    EXPECT_EQ(env.at("LOCKSTEP_NODE_RANK"), std::to_string(r / 2)) << rank;
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(r % 2)) << rank;
    EXPECT_EQ(env.at("ROLE_RANK"), rank);
    EXPECT_EQ(env.at("MASTER_ADDR"), round0.at(rank).at("MASTER_ADDR"));
    EXPECT_EQ(env.at("LOCKSTEP_RESTART_COUNT"), "1");
    if (r / 2 == 2) {
      // Node-rank 2's ranks run in the spare's launcher now, not in the killed one's.
      EXPECT_NE(env.at("PID"), round0.at(rank).at("PID")) << rank;
      EXPECT_TRUE(PidAlive(env.at("PID"))) << rank;
    }
  }
  StatusOr<ControlStatus> after = WaitForStatus(
      [](const ControlStatus& s) { return s.round == 1 && s.running; });
  ASSERT_TRUE(after.ok()) << after.status() << Logs();
  EXPECT_EQ(after->promotions, 1u);
  EXPECT_EQ(after->standby_spares, 0u);
  EXPECT_EQ(after->failure_restarts, 0u);
  ASSERT_EQ(after->serving.size(), 1u);
  EXPECT_EQ(after->serving[0].node_rank, 2u);
  EXPECT_EQ(after->serving[0].spare_index, 0u);
  EXPECT_EQ(after->serving[0].round, 1u);
  ASSERT_TRUE(after->last_failure.has_value());
  EXPECT_EQ(after->last_failure->node_rank, 2);
  for (size_t i : {0u, 1u}) EXPECT_FALSE(gang_[i]->Wait(milliseconds(10)).has_value()) << Logs();
  EXPECT_FALSE(spares_[0]->Wait(milliseconds(10)).has_value()) << Logs();
  EXPECT_NE(Logs().find("promoted: this spare serves a lost node rank"), std::string::npos);
}

TEST_F(SpareTest, WithoutASpareLeftALostNodeEndsTheGangAsBefore) {
  Start(2, 1, 1);
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 2, seconds(30))) << Logs();
  ASSERT_TRUE(WaitForStatus([](const ControlStatus& s) {
                return s.running && s.standby_spares == 1;
              }).ok()) << Logs();
  gang_[1]->Signal(SIGKILL);
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.1.", 2, seconds(20))) << Logs();
  ASSERT_TRUE(WaitForStatus([](const ControlStatus& s) { return s.round == 1 && s.running; })
                  .ok()) << Logs();
  // The promoted spare is lost too: no spare is left, so with --max-restarts 0 the gang exits
  // as it always did (the operator's restart path).
  spares_[0]->Signal(SIGKILL);
  std::optional<int> code = gang_[0]->Wait(seconds(15));
  ASSERT_TRUE(code.has_value()) << Logs();
  EXPECT_EQ(*code, 75) << Logs();
}

TEST_F(SpareTest, TheReplacedLauncherIsFencedOut) {
  // A partition, not a death: node 1's launcher stops answering (SIGSTOP) past the peer
  // timeout, the spare replaces it; when it wakes, its claim on node-rank 1 is refused.
  Start(2, 1, 2, {"--peer-timeout", "1.5", "--heartbeat-interval", "0.3"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 2, seconds(30))) << Logs();
  ASSERT_TRUE(WaitForStatus([](const ControlStatus& s) {
                return s.running && s.standby_spares == 2;
              }).ok()) << Logs();
  gang_[1]->Signal(SIGSTOP);
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.1.", 2, seconds(20))) << Logs();
  StatusOr<ControlStatus> st =
      WaitForStatus([](const ControlStatus& s) { return s.round == 1 && s.running; });
  ASSERT_TRUE(st.ok()) << Logs();
  ASSERT_EQ(st->serving.size(), 1u);
  EXPECT_EQ(st->serving[0].spare_index, 0u);  // the lowest index first
  EXPECT_EQ(st->standby_spares, 1u);
  gang_[1]->Signal(SIGCONT);
  std::optional<int> code = gang_[1]->Wait(seconds(20));
  ASSERT_TRUE(code.has_value()) << Logs();
  EXPECT_NE(*code, 0) << Logs();
  // A launcher claiming node-rank 1 again (the replaced pod's, say, restarted) is refused.
  std::vector<std::string> args = {"--peer-timeout", "1.5", "--heartbeat-interval", "0.3",
                                   "--node-rank", "1"};
  LauncherProcess again(Spec(2, 1, args), dir_.path() + "/again.log");
  std::optional<int> refused = again.Wait(seconds(20));
  ASSERT_TRUE(refused.has_value()) << again.Log();
  EXPECT_EQ(*refused, 77) << again.Log();
  EXPECT_NE(again.Log().find("is served by spare 0"), std::string::npos) << again.Log();
  // The world kept running through that: still round 1.
  StatusOr<ControlStatus> later = GetStatus();
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->round, 1u);
  EXPECT_TRUE(later->running);
}

TEST_F(SpareTest, ThePromotionStopsTheSurvivorsChildrenWithinTheShortCap) {
  // Trainers that take 30 s to stop on SIGTERM (stuck in a collective with the lost peer) and a
  // 10 s --grace-period: the survivors' children get kPromotionStopGraceCap (2 s), not 10 s.
  grace_ = "10";
  child_args_ = {"--forever", "--term-delay", "30"};
  Start(2, 1, 1);
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 2, seconds(30))) << Logs();
  ASSERT_TRUE(WaitForStatus([](const ControlStatus& s) {
                return s.running && s.standby_spares == 1;
              }).ok()) << Logs();
  const Steady::time_point killed = Steady::now();
  gang_[1]->Signal(SIGKILL);
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.1.", 2, seconds(20))) << Logs();
  const auto took = std::chrono::duration_cast<milliseconds>(Steady::now() - killed);
  EXPECT_LT(took, milliseconds(5000)) << Logs();
  EXPECT_GE(took, milliseconds(1900)) << "the cap, not at once: the children had their grace";
  EXPECT_TRUE(FileExists(dir_.path() + "/term.0.0")) << "SIGTERM first";
}

TEST_F(SpareTest, AStandbySpareIsReleasedWhenTheJobFinishes) {
  gang_.clear();
  LauncherSpec spec = Spec(2, 1, {});
  spec.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path(), "--sleep", "2"};
  for (int i = 0; i < 2; ++i) {
    LauncherSpec s = spec;
    s.args.insert(s.args.end(), {"--node-rank", std::to_string(i)});
    gang_.push_back(std::make_unique<LauncherProcess>(
        s, dir_.path() + "/launcher." + std::to_string(i) + ".log"));
  }
  LauncherSpec s = spec;
  s.args.insert(s.args.end(), {"--spare", "--role-index", "0"});
  spares_.push_back(std::make_unique<LauncherProcess>(s, dir_.path() + "/spare.0.log"));
  for (const auto& l : gang_) {
    std::optional<int> code = l->Wait(seconds(30));
    ASSERT_TRUE(code.has_value()) << Logs();
    EXPECT_EQ(*code, 0) << Logs();
  }
  std::optional<int> code = spares_[0]->Wait(seconds(10));
  ASSERT_TRUE(code.has_value()) << Logs();
  EXPECT_EQ(*code, 0) << Logs();
  EXPECT_NE(spares_[0]->Log().find("released"), std::string::npos) << Logs();
}

// kill -> every rank of the next round running (Status says running), once per run, each on a
// fresh gang of 4 pods x 2 ranks with one spare. A SIGKILLed launcher's connection closes at once
// (a pod killed on a live node, or a node whose kernel still resets its connections); a silent
// one (SIGSTOP: a node gone without a word) is noticed after --peer-timeout. Runs:
// LOCKSTEP_SPARE_MEASURE_RUNS (default 1); the figures are printed, the median bounded.
std::vector<double> Measure(int signal, const std::vector<std::string>& extra) {
  const char* runs_env = std::getenv("LOCKSTEP_SPARE_MEASURE_RUNS");
  const int runs = runs_env != nullptr ? std::max(1, std::atoi(runs_env)) : 1;
  std::vector<double> ms;
  for (int run = 0; run < runs; ++run) {
    Gang g;
    g.Start(4, 2, 1, extra);
    EXPECT_TRUE(WaitForFiles(g.dir_.path(), "env.0.", 8, seconds(30))) << g.Logs();
    EXPECT_TRUE(g.WaitForStatus([](const ControlStatus& s) {
                   return s.running && s.standby_spares == 1;
                 }).ok()) << g.Logs();
    const Steady::time_point killed = Steady::now();
    g.gang_[3]->Signal(signal);
    StatusOr<ControlStatus> st =
        g.WaitForStatus([](const ControlStatus& s) { return s.round == 1 && s.running; });
    EXPECT_TRUE(st.ok() && st->round == 1 && st->running) << g.Logs();
    ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - killed).count());
    if (signal == SIGSTOP) g.gang_[3]->Signal(SIGKILL);
  }
  std::sort(ms.begin(), ms.end());
  std::string all;
  for (double m : ms) all += std::to_string(static_cast<int>(m)) + " ";
  std::printf("spare recovery (signal %d): runs=%zu median=%.0f ms p95=%.0f ms max=%.0f ms: %s\n",
              signal, ms.size(), ms[ms.size() / 2], ms[(ms.size() * 95) / 100 < ms.size()
                                                        ? (ms.size() * 95) / 100 : ms.size() - 1],
              ms.back(), all.c_str());
  return ms;
}

TEST(SpareMeasure, KilledLauncherEveryRankRunningAgainWithin4s) {
  const std::vector<double> ms = Measure(SIGKILL, {});
  EXPECT_LT(ms[ms.size() / 2], 4000.0);
}

TEST(SpareMeasure, SilentLauncherEveryRankRunningAgainWithin4sAtPeerTimeout2s) {
  const std::vector<double> ms = Measure(SIGSTOP, {"--peer-timeout", "2", "--heartbeat-interval",
                                                   "0.5"});
  EXPECT_LT(ms[ms.size() / 2], 4000.0);
}

}  // namespace
}  // namespace lockstep::launcher::testing
