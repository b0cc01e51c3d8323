// Failure handling across launcher processes: a killed launcher, a crashing child with in-place
// restarts, SIGTERM forwarding, and hang detection.
#include <signal.h>

#include <thread>

#include <gtest/gtest.h>

#include "harness.h"

namespace lockstep::launcher::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

class FailureTest : public ::testing::Test {
 protected:
  LauncherSpec Spec(int nnodes, int node_rank, int nproc, std::vector<std::string> child_args,
                    std::vector<std::string> extra = {}) {
    LauncherSpec s;
    s.args = {"--nnodes", std::to_string(nnodes), "--node-rank", std::to_string(node_rank),
              "--nproc-per-node", std::to_string(nproc), "--rdzv-endpoint",
              "127.0.0.1:" + std::to_string(port_), "--rdzv-id", "failure-test",
              "--advertise-addr", "127.0.0.1", "--join-timeout", "30", "--grace-period", "2"};
    s.args.insert(s.args.end(), extra.begin(), extra.end());
    s.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path()};
    s.command.insert(s.command.end(), child_args.begin(), child_args.end());
    s.env = {{"LOCKSTEP_TOKEN", "t"}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
    return s;
  }
  void StartGang(int nnodes, int nproc, std::vector<std::string> child_args,
                 std::vector<std::string> extra = {}) {
    for (int i = 0; i < nnodes; ++i) {
      launchers_.push_back(std::make_unique<LauncherProcess>(
          Spec(nnodes, i, nproc, child_args, extra),
          dir_.path() + "/launcher." + std::to_string(i) + ".log"));
    }
  }
  std::string Logs() const {
    std::string out;
    for (const auto& l : launchers_) out += l->Log();
    return out;
  }
  std::string Termination(int node) const {
    return ReadWholeFile(dir_.path() + "/launcher." + std::to_string(node) + ".log.termination");
  }

  TempDir dir_;
  int port_ = FreePort();
  std::vector<std::unique_ptr<LauncherProcess>> launchers_;
};

TEST_F(FailureTest, KillingOneLauncherStopsEveryOtherNodesChildrenWithin5s) {
  StartGang(4, 2, {"--forever"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 8, seconds(30))) << Logs();
  const std::vector<std::map<std::string, std::string>> envs = ReadEnvFiles(dir_.path(), "0");
  launchers_[2]->Signal(SIGKILL);
  const Steady::time_point killed = Steady::now();
  // Node 0 (the server) leaves last: it keeps the server up for kLostReportLinger (5 s) so the
  // operator can read the lost member (docs/failures.md "Peer evidence").
  for (int i : {1, 3, 0}) {
    std::optional<int> code = launchers_[static_cast<size_t>(i)]->Wait(seconds(15));
    ASSERT_TRUE(code.has_value()) << "launcher " << i << " kept running\n" << Logs();
    EXPECT_EQ(*code, 75) << launchers_[static_cast<size_t>(i)]->Log();
    EXPECT_NE(Termination(i).find("peer-lost"), std::string::npos) << Termination(i);
    EXPECT_LT(Steady::now() - killed, i == 0 ? seconds(5 + 5) : seconds(5)) << i << Logs();
  }
  EXPECT_NE(launchers_[0]->Log().find("keeping the rendezvous server up"), std::string::npos);
  // Every surviving node's children got SIGTERM; the killed node's children died with it.
  for (const auto& env : envs) {
    const int rank = std::stoi(env.at("LOCKSTEP_RANK"));
    if (rank / 2 == 2) {
      const pid_t pid = std::stoi(env.at("PID"));
      const Steady::time_point until = Steady::now() + seconds(3);
      while (::kill(pid, 0) == 0 && Steady::now() < until) {
        std::this_thread::sleep_for(milliseconds(20));
      }
      EXPECT_NE(::kill(pid, 0), 0) << "orphaned rank " << rank << " still alive";
    } else {
      EXPECT_TRUE(FileExists(dir_.path() + "/term.0." + std::to_string(rank))) << rank;
    }
  }
}

TEST_F(FailureTest, LosingNodeZeroStopsTheOthersWithThePeerLostCode) {
  StartGang(3, 1, {"--forever"}, {"--peer-timeout", "2"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 3, seconds(30))) << Logs();
  launchers_[0]->Signal(SIGKILL);
  const Steady::time_point killed = Steady::now();
  for (int i : {1, 2}) {
    std::optional<int> code = launchers_[static_cast<size_t>(i)]->Wait(seconds(10));
    ASSERT_TRUE(code.has_value()) << Logs();
    EXPECT_EQ(*code, 75) << Logs();
  }
  EXPECT_LT(Steady::now() - killed, seconds(5));
}

// Fencing (docs/failures.md "Peer evidence"): a launcher that loses node 0 kills its children at
// once, with no grace to checkpoint in: node 0 may have reported it lost, and the next attempt
// may start without it. Children that would take 30 s after SIGTERM (a trainer checkpointing)
// are gone within the peer timeout, and never saw a SIGTERM.
TEST_F(FailureTest, LosingNodeZeroKillsTheChildrenAtOnceWithoutAGrace) {
  StartGang(3, 1, {"--forever", "--term-delay", "30"}, {"--peer-timeout", "2"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 3, seconds(30))) << Logs();
  const std::vector<std::map<std::string, std::string>> envs = ReadEnvFiles(dir_.path(), "0");
  launchers_[0]->Signal(SIGKILL);
  const Steady::time_point killed = Steady::now();
  for (int i : {1, 2}) {
    std::optional<int> code = launchers_[static_cast<size_t>(i)]->Wait(seconds(20));
    ASSERT_TRUE(code.has_value()) << Logs();
    EXPECT_EQ(*code, 75) << Logs();
  }
  EXPECT_LT(Steady::now() - killed, seconds(4)) << "the children were given a grace\n" << Logs();
  for (const auto& env : envs) {
    const int rank = std::stoi(env.at("LOCKSTEP_RANK"));
    if (rank == 0) continue;
    EXPECT_FALSE(FileExists(dir_.path() + "/term.0." + std::to_string(rank)))
        << "rank " << rank << " got SIGTERM, not SIGKILL";
    EXPECT_NE(::kill(std::stoi(env.at("PID")), 0), 0) << "rank " << rank << " still alive";
  }
  EXPECT_NE(Logs().find("killing the children at once (fencing)"), std::string::npos) << Logs();
}

TEST_F(FailureTest, InPlaceRestartRecoversFromAChildCrash) {
  // Rank 3 fails in the first attempt only; the gang restarts in place and then succeeds.
  StartGang(3, 2, {"--sleep", "1", "--fail-rank", "3", "--fail-code", "3", "--fail-restart", "0"},
            {"--max-restarts", "2"});
  for (size_t i = 0; i < launchers_.size(); ++i) {
    std::optional<int> code = launchers_[i]->Wait(seconds(60));
    ASSERT_TRUE(code.has_value()) << Logs();
    EXPECT_EQ(*code, 0) << Logs();
  }
  const auto first = ReadEnvFiles(dir_.path(), "0");
  const auto second = ReadEnvFiles(dir_.path(), "1");
  EXPECT_EQ(first.size(), 6u);
  ASSERT_EQ(second.size(), 6u) << Logs();
  for (const auto& env : second) {
    EXPECT_EQ(env.at("LOCKSTEP_RESTART_COUNT"), "1");
    EXPECT_EQ(env.at("LOCKSTEP_ATTEMPT"), "1");
  }
}

TEST_F(FailureTest, WithoutRestartsTheFailingNodeExitsWithTheChildCode) {
  StartGang(2, 2, {"--forever", "--fail-rank", "1", "--fail-code", "3"});
  std::optional<int> failing = launchers_[0]->Wait(seconds(30));
  std::optional<int> other = launchers_[1]->Wait(seconds(30));
  ASSERT_TRUE(failing && other) << Logs();
  EXPECT_EQ(*failing, 3) << Logs();
  EXPECT_EQ(*other, 75) << Logs();
  EXPECT_NE(Termination(1).find("\"reason\":\"peer-failed\""), std::string::npos) << Termination(1);
  const std::string report = Termination(0);
  EXPECT_NE(report.find("\"rank\":1"), std::string::npos) << report;
  EXPECT_NE(report.find("\"exitCode\":3"), std::string::npos) << report;
  EXPECT_NE(report.find("failing with code 3 on purpose"), std::string::npos) << report;
}

// TensorFlow's parameter-server contract: ps and worker tasks serve until stopped and the chief's
// success is the job's. The chief's launcher tells the others to stop, and every pod succeeds.
TEST_F(FailureTest, ATensorFlowChiefsSuccessStopsThePsAndWorkersWhichExitZero) {
  struct Node {
    const char* role;
    std::vector<std::string> child_args;
  };
  const std::vector<Node> nodes = {{"chief", {}}, {"ps", {"--forever"}}, {"worker", {"--forever"}}};
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    launchers_.push_back(std::make_unique<LauncherProcess>(
        Spec(3, i, 1, nodes[i].child_args,
             {"--framework", "tensorflow", "--role", nodes[i].role, "--framework-port",
              std::to_string(FreePort())}),
        dir_.path() + "/launcher." + std::to_string(i) + ".log"));
  }
  const Steady::time_point start = Steady::now();
  for (int i = 0; i < 3; ++i) {
    std::optional<int> code = launchers_[i]->Wait(seconds(30));
    ASSERT_TRUE(code.has_value()) << "node " << i << " still runs\n" << Logs();
    EXPECT_EQ(*code, 0) << "node " << i << "\n" << Logs();
  }
  EXPECT_LT(Steady::now() - start, seconds(20)) << Logs();
  EXPECT_NE(Termination(0).find("\"reason\":\"succeeded\""), std::string::npos)
      << Termination(0);
  for (int i : {1, 2}) {
    EXPECT_NE(Termination(i).find("\"reason\":\"finished\""), std::string::npos)
        << Termination(i);
  }
}

// TensorFlow 1's between-graph pattern (Kubeflow TFJob's dist-mnist): workers and parameter
// servers, no chief. The ps tasks serve until stopped; once every worker is done they are told
// the job finished, and node 0 (worker 0, the rendezvous server's host) stops waiting for them.
TEST_F(FailureTest, ATensorFlowJobWithoutAChiefEndsWhenEveryWorkerHasAndStopsThePs) {
  struct Node {
    const char* role;
    int role_index;
    std::vector<std::string> child_args;
  };
  const std::vector<Node> nodes = {{"worker", 0, {}}, {"ps", 0, {"--forever"}}, {"worker", 1, {}}};
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    LauncherSpec spec = Spec(3, i, 1, nodes[i].child_args,
                             {"--framework", "tensorflow", "--role", nodes[i].role,
                              "--framework-port", std::to_string(FreePort())});
    spec.env["LOCKSTEP_ROLE_INDEX"] = std::to_string(nodes[i].role_index);
    launchers_.push_back(std::make_unique<LauncherProcess>(
        spec, dir_.path() + "/launcher." + std::to_string(i) + ".log"));
  }
  for (int i = 0; i < 3; ++i) {
    std::optional<int> code = launchers_[i]->Wait(seconds(30));
    ASSERT_TRUE(code.has_value()) << "node " << i << " still runs\n" << Logs();
    EXPECT_EQ(*code, 0) << "node " << i << "\n" << Logs();
  }
  for (int i : {0, 2}) {
    EXPECT_NE(Termination(i).find("\"reason\":\"succeeded\""), std::string::npos)
        << Termination(i);
  }
  EXPECT_NE(Termination(1).find("\"reason\":\"finished\""), std::string::npos) << Termination(1);
}

// An exit code the job's FailJob rules name (--fail-exit-codes) is not restarted in place even with
// budget left: restarting cannot fix it, and the operator fails the job on that code anyway.
TEST_F(FailureTest, AFailJobExitCodeEndsTheGangWithoutAnInPlaceRestart) {
  StartGang(2, 2, {"--forever", "--fail-rank", "1", "--fail-code", "3"},
            {"--max-restarts", "2", "--fail-exit-codes", "2-4"});
  std::optional<int> failing = launchers_[0]->Wait(seconds(30));
  std::optional<int> other = launchers_[1]->Wait(seconds(30));
  ASSERT_TRUE(failing && other) << Logs();
  EXPECT_EQ(*failing, 3) << Logs();
  EXPECT_EQ(*other, 75) << Logs();
  EXPECT_FALSE(FileExists(dir_.path() + "/env.1.0")) << "a second round ran\n" << Logs();
  EXPECT_NE(Termination(0).find("\"restartCount\":0"), std::string::npos) << Termination(0);
  EXPECT_NE(Termination(0).find("FailJob exit code"), std::string::npos) << Termination(0);
}

TEST_F(FailureTest, SigtermReachesTheChildren) {
  StartGang(2, 2, {"--forever"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 4, seconds(30))) << Logs();
  launchers_[1]->Signal(SIGTERM);
  std::optional<int> code = launchers_[1]->Wait(seconds(10));
  ASSERT_TRUE(code.has_value()) << Logs();
  EXPECT_EQ(*code, 143) << Logs();
  EXPECT_TRUE(FileExists(dir_.path() + "/term.0.2"));
  EXPECT_TRUE(FileExists(dir_.path() + "/term.0.3"));
  std::optional<int> node0 = launchers_[0]->Wait(seconds(10));
  ASSERT_TRUE(node0.has_value()) << Logs();
  EXPECT_EQ(*node0, 75);
}

// A launcher stopped by a signal (its pod deleted: suspend, preemption) gives its children the
// whole --grace-period to checkpoint, and exits 128+n with reason "terminated" even when they
// exit 0: a trainer that stopped cleanly did not finish the job.
TEST_F(FailureTest, ASignalsStopWaitsForTheChildrenAndExits128PlusN) {
  StartGang(2, 2, {"--forever", "--term-delay", "2"}, {"--grace-period", "30"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 4, seconds(30))) << Logs();
  const Steady::time_point signalled = Steady::now();
  launchers_[1]->Signal(SIGTERM);
  std::optional<int> code = launchers_[1]->Wait(seconds(20));
  ASSERT_TRUE(code.has_value()) << Logs();
  const double took = std::chrono::duration<double>(Steady::now() - signalled).count();
  EXPECT_EQ(*code, 143) << Logs();
  EXPECT_GE(took, 1.5) << "the children's 2 s after SIGTERM were cut short\n" << Logs();
  EXPECT_TRUE(FileExists(dir_.path() + "/term.0.2"));
  EXPECT_TRUE(FileExists(dir_.path() + "/term.0.3"));
  EXPECT_EQ(launchers_[1]->Log().find("past the grace period"), std::string::npos) << Logs();
  const std::string term = Termination(1);
  EXPECT_NE(term.find("\"reason\":\"terminated\""), std::string::npos) << term;
  EXPECT_NE(term.find("\"signal\":15"), std::string::npos) << term;
  EXPECT_NE(term.find("\"exitCode\":143"), std::string::npos) << term;
  std::optional<int> node0 = launchers_[0]->Wait(seconds(20));
  ASSERT_TRUE(node0.has_value()) << Logs();
  EXPECT_EQ(*node0, 75) << Logs();
}

// A stop the launcher decides itself (here: a peer lost) keeps the 10 s cap whatever
// --grace-period says: the gang is restarting, and children that ignore SIGTERM must not hold
// it up for the pod's whole grace.
TEST_F(FailureTest, AGangStopKeepsTheTenSecondCapWhateverTheGracePeriod) {
  StartGang(2, 1, {"--forever", "--term-delay", "60"}, {"--grace-period", "40"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 2, seconds(30))) << Logs();
  launchers_[1]->Signal(SIGKILL);
  const Steady::time_point killed = Steady::now();
  std::optional<int> node0 = launchers_[0]->Wait(seconds(25));
  ASSERT_TRUE(node0.has_value()) << "still waiting after 25 s: the cap did not apply\n" << Logs();
  const double took = std::chrono::duration<double>(Steady::now() - killed).count();
  EXPECT_EQ(*node0, 75) << Logs();
  EXPECT_GE(took, 9.0) << Logs();
  EXPECT_LE(took, 20.0) << Logs();
  EXPECT_NE(launchers_[0]->Log().find("past the grace period"), std::string::npos) << Logs();
}

TEST_F(FailureTest, ARankThatStopsTouchingItsHeartbeatFileIsAHang) {
  // Each pod has its own filesystem in a cluster; here each launcher gets its own file.
  for (int i = 0; i < 2; ++i) {
    launchers_.push_back(std::make_unique<LauncherProcess>(
        Spec(2, i, 2, {"--forever", "--heartbeat-every", "0.2", "--no-heartbeat-rank", "3"},
             {"--hang-timeout", "1.5", "--heartbeat-file",
              dir_.path() + "/heartbeat-node" + std::to_string(i)}),
        dir_.path() + "/launcher." + std::to_string(i) + ".log"));
  }
  std::optional<int> hung = launchers_[1]->Wait(seconds(20));
  std::optional<int> other = launchers_[0]->Wait(seconds(20));
  ASSERT_TRUE(hung && other) << Logs();
  EXPECT_EQ(*hung, 76) << Logs();
  EXPECT_EQ(*other, 75) << Logs();
  EXPECT_NE(Termination(1).find("\"reason\":\"hang\""), std::string::npos) << Termination(1);
  EXPECT_NE(Termination(1).find("rank 3"), std::string::npos) << Termination(1);
}

// Issue 21: progress reports are a hang signal too. Rank 0 reports steps 1..5 of 100 every
// 0.2 s, then reports nothing more while every rank stays alive and keeps touching its heartbeat file: the
// heartbeat files alone would never call this a hang; the stalled step does.
TEST_F(FailureTest, ATrainerWhoseProgressStopsWhileItsRanksLiveIsAHang) {
  for (int i = 0; i < 2; ++i) {
    launchers_.push_back(std::make_unique<LauncherProcess>(
        Spec(2, i, 1, {"--forever", "--heartbeat-every", "0.2", "--progress-total", "100",
              "--progress-stall-at", "5"},
             {"--hang-timeout", "2", "--heartbeat-file",
              dir_.path() + "/heartbeat-node" + std::to_string(i)}),
        dir_.path() + "/launcher." + std::to_string(i) + ".log"));
  }
  std::optional<int> hung = launchers_[0]->Wait(seconds(30));
  std::optional<int> other = launchers_[1]->Wait(seconds(30));
  ASSERT_TRUE(hung && other) << Logs();
  EXPECT_EQ(*hung, 76) << Logs();
  EXPECT_EQ(*other, 75) << Logs();
  const std::string term = Termination(0);
  EXPECT_NE(term.find("\"reason\":\"hang\""), std::string::npos) << term;
  EXPECT_NE(term.find("training progress stuck at step 5"), std::string::npos) << term;
}

}  // namespace
}  // namespace lockstep::launcher::testing
