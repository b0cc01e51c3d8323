// The same framework examples through the real lockstep-launcher binary: one launcher process
// per pod on 127.0.0.1, rendezvous, framework environment from the adapters, node 0's stores
// hosted by the launcher itself.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "tests/launcher/frameworks/pod_driver.h"
#include "tests/testing/host_state.h"

namespace lockstep::launcher::testing {
namespace {

struct Launched {
  pid_t pid = -1;
  std::string log;
  std::string termination;  // the termination message it wrote
  int exit_code = -1;
};

// Starts one launcher per pod; `extra` flags go before the command.
std::vector<Launched> StartLaunchers(const std::string& framework, int nnodes, int nproc,
                                     const std::vector<std::string>& command,
                                     const std::vector<std::string>& extra = {}) {
  const int rdzv = FreePort();
  const int master = FreePort();
  const int kv = FreePort();
  static int gangs = 0;  // gangs may run side by side: each its own log files
  const std::string prefix =
      "/tmp/lockstep-fwbin-" + std::to_string(::getpid()) + "-" + std::to_string(gangs++) + "-";
  std::vector<Launched> out(static_cast<size_t>(nnodes));
  for (int n = 0; n < nnodes; ++n) {
    Launched& l = out[static_cast<size_t>(n)];
    l.log = prefix + std::to_string(n) + ".log";
    std::vector<std::string> argv = {LOCKSTEP_LAUNCHER_BIN,
                                     "--framework",
                                     framework,
                                     "--nnodes",
                                     std::to_string(nnodes),
                                     "--node-rank",
                                     std::to_string(n),
                                     "--nproc-per-node",
                                     std::to_string(nproc),
                                     "--rdzv-endpoint",
                                     "127.0.0.1:" + std::to_string(rdzv),
                                     "--rdzv-id",
                                     "fw-test",
                                     "--advertise-addr",
                                     "127.0.0.1",
                                     "--framework-port",
                                     std::to_string(FreePort()),
                                     "--master-port",
                                     std::to_string(master),
                                     "--kv-port",
                                     std::to_string(kv),
                                     "--join-timeout",
                                     "60",
                                     "--termination-log",
                                     l.log + ".termination"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "LOCKSTEP_TOKEN=fw-token",
                                    "LOCKSTEP_NCCL_LIBRARY=/nonexistent/libnccl.so.2", "HOME=/tmp",
                                    "JAX_PLATFORMS=cpu"};
    l.pid = ::lockstep::testing::SpawnWithLog(std::move(argv), std::move(env), l.log);
  }
  return out;
}

// Waits for every launcher (killing them at the deadline); replaces each log path by the log.
void WaitLaunchers(std::vector<Launched>& out, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (Launched& l : out) {
    while (l.pid > 0) {
      int status = 0;
      if (::waitpid(l.pid, &status, WNOHANG) == l.pid) {
        l.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(l.pid, SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(2));
        ::kill(l.pid, SIGKILL);
        ::waitpid(l.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string path = l.log;
    l.log = ::lockstep::testing::ReadWholeFile(path);
    l.termination = ::lockstep::testing::ReadWholeFile(path + ".termination");
    ::unlink(path.c_str());
    ::unlink((path + ".termination").c_str());
  }
}

// Starts one launcher per pod, waits for all (killing them at the deadline), returns their logs.
std::vector<Launched> RunLaunchers(const std::string& framework, int nnodes, int nproc,
                                   const std::vector<std::string>& command, int timeout_s) {
  std::vector<Launched> out = StartLaunchers(framework, nnodes, nproc, command);
  WaitLaunchers(out, timeout_s);
  return out;
}

std::vector<std::string> LinesWith(const std::vector<Launched>& all, const std::string& prefix) {
  std::vector<std::string> out;
  for (const Launched& l : all) {
    for (std::string& line : ::lockstep::testing::LinesFrom(l.log, prefix)) {
      out.push_back(std::move(line));
    }
  }
  return out;
}

std::string Logs(const std::vector<Launched>& all) {
  std::string out;
  for (const Launched& l : all) out += "---- exit " + std::to_string(l.exit_code) + "\n" + l.log;
  return out;
}

TEST(LauncherBinary, PyTorchDdpTwoLaunchersTimesTwoProcs) {
  if (!VenvHasModule("torch")) GTEST_SKIP() << "no torch in " << VenvPython();
  auto all = RunLaunchers(
      "pytorch", 2, 2,
      {VenvPython(), RepoRoot() + "/examples/frameworks/pytorch/train.py", "--epochs", "2"}, 240);
  for (const Launched& l : all) EXPECT_EQ(l.exit_code, 0) << Logs(all);
  std::vector<std::string> lines = LinesWith(all, "WEIGHTS rank=");
  ASSERT_EQ(lines.size(), 4u) << Logs(all);
  std::set<std::string> digests;
  for (const std::string& l : lines) digests.insert(l.substr(l.find("sha="), 20));
  EXPECT_EQ(digests.size(), 1u) << Logs(all);
}

// One digest over every WEIGHTS line (empty when the lines are missing or disagree).
std::string OneDigest(const std::vector<Launched>& all, size_t ranks) {
  std::vector<std::string> lines = LinesWith(all, "WEIGHTS rank=");
  std::set<std::string> digests;
  for (const std::string& l : lines) digests.insert(l.substr(l.find("sha="), 20));
  return lines.size() == ranks && digests.size() == 1 ? *digests.begin() : "";
}

// The value of `key=` in a line ("" when absent).
std::string Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 2;
  return line.substr(from, line.find(' ', from) - from);
}

// Suspend, preemption, eviction as the launchers see them: SIGTERM to every launcher
// mid-training. They forward it and wait (--grace-period); the ranks agree on one step, rank 0
// checkpoints it, every rank prints STOPPED and exits; the launchers exit 143, reason
// "terminated". The gang started again from that checkpoint ends with the weights of a run
// never interrupted, bit for bit.
TEST(LauncherBinary, PyTorchSigtermMidTrainingCheckpointsAndTheResumedRunEndsIdentical) {
  if (!VenvHasModule("torch")) GTEST_SKIP() << "no torch in " << VenvPython();
  const std::string base = "/tmp/lockstep-graceful-" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto command = [&](const std::string& ckpt, std::vector<std::string> more) {
    std::vector<std::string> c = {VenvPython(),
                                  RepoRoot() + "/examples/frameworks/pytorch/train.py",
                                  "--epochs", "3", "--steps-per-epoch", "6", "--batch-size", "16",
                                  "--checkpoint-dir", base + "/" + ckpt};
    c.insert(c.end(), more.begin(), more.end());
    return c;
  };
  // The uninterrupted run; the stopped one starts beside it (the machine is small: the imports
  // take most of the time).
  std::vector<Launched> whole = StartLaunchers("pytorch", 2, 2, command("whole", {}));
  std::vector<Launched> stopped =
      StartLaunchers("pytorch", 2, 2, command("stopped", {"--sleep-per-step", "0.4"}),
                     {"--grace-period", "60"});
  // Mid-training: the first epoch's checkpoint is written, the second epoch runs.
  const std::string ckpt = base + "/stopped/checkpoint.pt";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (!std::filesystem::exists(ckpt) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const bool mid_training = std::filesystem::exists(ckpt);
  for (const Launched& l : stopped) ::kill(l.pid, SIGTERM);
  WaitLaunchers(stopped, 120);
  WaitLaunchers(whole, 300);
  ASSERT_TRUE(mid_training) << "no checkpoint within 300 s\n" << Logs(stopped);
  for (const Launched& l : whole) EXPECT_EQ(l.exit_code, 0) << Logs(whole);
  const std::string expected = OneDigest(whole, 4);
  ASSERT_FALSE(expected.empty()) << Logs(whole);

  for (const Launched& l : stopped) {
    EXPECT_EQ(l.exit_code, 143) << Logs(stopped);
    EXPECT_NE(l.termination.find("\"reason\":\"terminated\""), std::string::npos) << l.termination;
    EXPECT_EQ(l.log.find("past the grace period"), std::string::npos) << Logs(stopped);
  }
  EXPECT_TRUE(LinesWith(stopped, "WEIGHTS ").empty()) << "the run finished before the stop\n"
                                                      << Logs(stopped);
  const std::vector<std::string> stops = LinesWith(stopped, "STOPPED ");
  ASSERT_EQ(stops.size(), 4u) << Logs(stopped);
  std::set<std::string> steps;
  for (const std::string& l : stops) steps.insert(Field(l, "step"));
  ASSERT_EQ(steps.size(), 1u) << "every rank stops at the same step\n" << Logs(stopped);
  const int step = std::stoi(stops.front().substr(std::string("STOPPED step=").size()));
  EXPECT_GE(step, 6) << Logs(stopped);  // after the first epoch's checkpoint
  EXPECT_LT(step, 18) << Logs(stopped);

  std::vector<Launched> resumed = RunLaunchers("pytorch", 2, 2, command("stopped", {}), 360);
  for (const Launched& l : resumed) EXPECT_EQ(l.exit_code, 0) << Logs(resumed);
  const std::vector<std::string> starts = LinesWith(resumed, "RESUMED ");
  ASSERT_EQ(starts.size(), 4u) << Logs(resumed);
  for (const std::string& l : starts) EXPECT_EQ(Field(l, "step"), std::to_string(step)) << l;
  EXPECT_EQ(OneDigest(resumed, 4), expected) << Logs(resumed);
  std::cout << "[ graceful ] stopped at step " << step << " of 18; resumed digest " << expected
            << std::endl;
  std::filesystem::remove_all(base);
}

TEST(LauncherBinary, JaxTwoLaunchers) {
  if (!VenvHasModule("jax")) GTEST_SKIP() << "no jax in " << VenvPython();
  auto all = RunLaunchers("jax", 2, 1,
                          {VenvPython(), RepoRoot() + "/examples/frameworks/jax/train.py"}, 180);
  for (const Launched& l : all) EXPECT_EQ(l.exit_code, 0) << Logs(all);
  std::vector<std::string> lines = LinesWith(all, "JAX process=");
  ASSERT_EQ(lines.size(), 2u) << Logs(all);
  for (const std::string& l : lines) EXPECT_NE(l.find(" count=2 "), std::string::npos) << l;
  for (const std::string& l : lines) EXPECT_NE(l.find(" sum=3 "), std::string::npos) << l;
}

// Real Horovod runs end to end from its own venv (framework_horovod_e2e_test); here the
// protocol client checks the launchers' side of its Gloo rendezvous.
TEST(LauncherBinary, HorovodGlooRendezvousTwoLaunchersTimesTwoProcs) {
  auto all = RunLaunchers(
      "horovod", 2, 2,
      {VenvPython(), RepoRoot() + "/tests/launcher/frameworks/horovod_protocol_client.py"}, 120);
  for (const Launched& l : all) EXPECT_EQ(l.exit_code, 0) << Logs(all);
  EXPECT_EQ(LinesWith(all, "HVD_PROTO_OK").size(), 4u) << Logs(all);
}

}  // namespace
}  // namespace lockstep::launcher::testing
