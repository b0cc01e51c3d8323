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
#include <set>
#include <thread>

#include "tests/launcher/frameworks/pod_driver.h"
#include "tests/testing/host_state.h"

namespace lockstep::launcher::testing {
namespace {

struct Launched {
  pid_t pid = -1;
  std::string log;
  int exit_code = -1;
};

// Starts one launcher per pod, waits for all (killing them at the deadline), returns their logs.
std::vector<Launched> RunLaunchers(const std::string& framework, int nnodes, int nproc,
                                   const std::vector<std::string>& command, int timeout_s) {
  const int rdzv = FreePort();
  const int master = FreePort();
  const int kv = FreePort();
  std::vector<Launched> out(static_cast<size_t>(nnodes));
  for (int n = 0; n < nnodes; ++n) {
    Launched& l = out[static_cast<size_t>(n)];
    l.log = "/tmp/lockstep-fwbin-" + std::to_string(::getpid()) + "-" + std::to_string(n) + ".log";
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
                                     l.log + ".termination",
                                     "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "LOCKSTEP_TOKEN=fw-token",
                                    "LOCKSTEP_NCCL_LIBRARY=/nonexistent/libnccl.so.2", "HOME=/tmp",
                                    "JAX_PLATFORMS=cpu"};
    l.pid = ::lockstep::testing::SpawnWithLog(std::move(argv), std::move(env), l.log);
  }
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
    ::unlink(path.c_str());
    ::unlink((path + ".termination").c_str());
  }
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
