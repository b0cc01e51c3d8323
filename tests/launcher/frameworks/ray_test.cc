// Ray through the real lockstep-launcher binary: three launcher processes play three pods on
// loopback (127.0.0.2-4, so every Ray node has an address of its own), rendezvous, and run
// `--framework ray`: node 0's child starts the head, waits for the three nodes and runs the
// entrypoint; the others join it. Ray's fixed default ports and /tmp/ray would collide on one
// machine, so each pod gets its own ports and temp dir through LOCKSTEP_RAY_START_ARGS, as a
// user would set them.
//
// Nothing may outlive a test: this binary is a child subreaper, so Ray processes that leave
// their launcher's process group (raylet puts each worker in a group of its own) stay our
// descendants; after the launchers exit, every descendant is listed (a leak fails the test) and
// killed, and the temp dirs are removed, on failure as well.

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/launcher/frameworks/pod_driver.h"
#include "tests/testing/host_state.h"

namespace lockstep::launcher::testing {
namespace {

using Steady = std::chrono::steady_clock;
constexpr int kNodes = 3;

// Parent pid and command line of every process on the machine.
std::map<pid_t, std::pair<pid_t, std::string>> ProcessTable() {
  std::map<pid_t, std::pair<pid_t, std::string>> table;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return table;
  while (dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string stat = ::lockstep::testing::ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (state == 'Z') continue;  // exited, waiting to be reaped
    std::string cmd = ::lockstep::testing::ReadWholeFile("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    table[pid] = {ppid, cmd.substr(0, 160)};
  }
  ::closedir(proc);
  return table;
}

// Every live descendant of this process: "pid cmdline".
std::map<pid_t, std::string> Descendants() {
  const auto table = ProcessTable();
  std::map<pid_t, std::string> out;
  std::set<pid_t> frontier = {::getpid()};
  while (!frontier.empty()) {
    std::set<pid_t> next;
    for (const auto& [pid, entry] : table) {
      if (frontier.count(entry.first) > 0 && out.count(pid) == 0) {
        out[pid] = entry.second;
        next.insert(pid);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

void ReapAll() {
  int status = 0;
  while (::waitpid(-1, &status, WNOHANG) > 0) {
  }
}

struct Launched {
  pid_t pid = -1;
  std::string log_path;
  std::string log;
  std::string termination;
  int exit_code = -1;
};

// One Ray job: three launchers, their logs, and the cleanup that runs whatever happens.
class RayJob {
 public:
  RayJob() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    char dir_template[] = "/tmp/lsray-XXXXXX";  // short: Ray's socket paths live under it
    dir_ = ::mkdtemp(dir_template);
  }
  ~RayJob() { Cleanup(); }

  // Starts the launchers, waits for them (SIGTERM, then SIGKILL at the deadline), then waits
  // a little for what Ray started to exit on its own and returns what did not.
  void Run(const std::vector<std::string>& entrypoint, int timeout_s) {
    const std::string bin = VenvPython().substr(0, VenvPython().rfind('/'));
    const int rdzv = FreePort();
    const int gcs = FreePort();
    const auto start = Steady::now();
    for (int n = 0; n < kNodes; ++n) {
      Launched& l = nodes_[n];
      l.log_path = dir_ + "/launcher-" + std::to_string(n) + ".log";
      const std::string host = "127.0.0.";
      std::vector<std::string> argv = {LOCKSTEP_LAUNCHER_BIN,
                                       "--framework",
                                       "ray",
                                       "--nnodes",
                                       std::to_string(kNodes),
                                       "--node-rank",
                                       std::to_string(n),
                                       "--nproc-per-node",
                                       "1",
                                       "--rdzv-endpoint",
                                       "127.0.0.2:" + std::to_string(rdzv),
                                       "--rdzv-id",
                                       "ray-test",
                                       "--advertise-addr",
                                       host + std::to_string(n + 2),
                                       "--framework-port",
                                       std::to_string(FreePort()),
                                       "--master-port",
                                       std::to_string(gcs),
                                       "--join-timeout",
                                       "60",
                                       "--grace-period",
                                       "10",
                                       "--termination-log",
                                       l.log_path + ".termination",
                                       "--"};
      argv.insert(argv.end(), entrypoint.begin(), entrypoint.end());
      // One CPU per node: three 1-CPU Train workers then need all three nodes.
      std::string ray_args = "--num-cpus=1 --temp-dir=" + dir_ + "/n" + std::to_string(n);
      for (const char* flag :
           {"--object-manager-port", "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port",
            "--metrics-export-port", "--runtime-env-agent-port"}) {
        ray_args += " " + std::string(flag) + "=" + std::to_string(FreePort());
      }
      // Only one head per machine can have the client server's fixed port 10001; the
      // autoscaler's monitor has nothing to do for a fixed-size cluster.
      if (n == 0) {
        ray_args += " --no-monitor --ray-client-server-port=" + std::to_string(FreePort());
      }
      std::vector<std::string> env = {"PATH=" + bin + ":/usr/bin:/bin",
                                      "HOME=" + dir_,
                                      "LOCKSTEP_TOKEN=ray-token",
                                      "LOCKSTEP_NCCL_LIBRARY=/nonexistent/libnccl.so.2",
                                      "LOCKSTEP_RAY_START_ARGS=" + ray_args,
                                      "LOCKSTEP_RAY_WAIT_TIMEOUT=150",
                                      "RAY_USAGE_STATS_ENABLED=0"};
      l.pid = ::lockstep::testing::SpawnWithLog(argv, env, l.log_path);
    }
    const auto deadline = start + std::chrono::seconds(timeout_s);
    for (Launched& l : nodes_) {
      while (l.pid > 0) {
        int status = 0;
        if (::waitpid(l.pid, &status, WNOHANG) == l.pid) {
          l.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          break;
        }
        if (Steady::now() > deadline) {
          timed_out_ = true;
          for (Launched& other : nodes_) {
            if (other.exit_code < 0 && other.pid > 0) ::kill(other.pid, SIGTERM);
          }
          std::this_thread::sleep_for(std::chrono::seconds(12));
          ::kill(l.pid, SIGKILL);
          ::waitpid(l.pid, &status, 0);
          l.exit_code = 128 + SIGKILL;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    seconds_ = std::chrono::duration<double>(Steady::now() - start).count();
    // Ray workers whose raylet is gone exit by themselves within moments; give them that.
    const auto settle = Steady::now() + std::chrono::seconds(5);
    while (!Descendants().empty() && Steady::now() < settle) {
      ReapAll();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    leaked_ = Descendants();
    for (Launched& l : nodes_) {
      l.log = ::lockstep::testing::ReadWholeFile(l.log_path);
      l.termination = ::lockstep::testing::ReadWholeFile(l.log_path + ".termination");
    }
  }

  const Launched& node(int n) const { return nodes_[n]; }
  bool timed_out() const { return timed_out_; }
  double seconds() const { return seconds_; }
  const std::map<pid_t, std::string>& leaked() const { return leaked_; }

  std::vector<std::string> Lines(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const Launched& l : nodes_) {
      for (std::string& line : ::lockstep::testing::LinesFrom(l.log, prefix)) {
        out.push_back(std::move(line));
      }
    }
    return out;
  }

  std::string Logs() const {
    std::string out;
    for (int n = 0; n < kNodes; ++n) {
      out += "---- launcher " + std::to_string(n) + " exit " + std::to_string(nodes_[n].exit_code) +
             "\n" + nodes_[n].log;
    }
    return out;
  }

 private:
  // Kills every descendant still alive (launchers included, after a failed assertion) and
  // removes the temp dirs.
  void Cleanup() {
    for (int round = 0; round < 20; ++round) {
      const auto left = Descendants();
      if (left.empty()) break;
      for (const auto& [pid, cmd] : left) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ReapAll();
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dir_;
  Launched nodes_[kNodes];
  bool timed_out_ = false;
  double seconds_ = 0;
  std::map<pid_t, std::string> leaked_;
};

std::string Describe(const std::map<pid_t, std::string>& procs) {
  std::string out;
  for (const auto& [pid, cmd] : procs) out += std::to_string(pid) + " " + cmd + "\n";
  return out;
}

TEST(Ray, ThreeLaunchersRunATorchTrainerOnThreeNodes) {
  if (!VenvHasModule("ray.train.torch")) GTEST_SKIP() << "no ray[train] in " << VenvPython();
  RayJob job;
  job.Run({VenvPython(), RepoRoot() + "/examples/frameworks/ray/train.py"}, 240);
  ASSERT_FALSE(job.timed_out()) << job.Logs();
  for (int n = 0; n < kNodes; ++n) EXPECT_EQ(job.node(n).exit_code, 0) << job.Logs();
  // The driver saw three nodes of one CPU each, and every Train worker a world of three.
  std::vector<std::string> lines = job.Lines("RAY_TRAIN ");
  ASSERT_EQ(lines.size(), 1u) << job.Logs();
  EXPECT_EQ(lines[0], "RAY_TRAIN workers=3 nodes=3 error=None") << job.Logs();
  EXPECT_EQ(job.Lines("RAY_CLUSTER "), std::vector<std::string>{"RAY_CLUSTER cpus=3"})
      << job.Logs();
  EXPECT_EQ(job.Lines("lockstep-ray: the job succeeded").size(), 2u) << job.Logs();
  EXPECT_TRUE(job.leaked().empty()) << "left running:\n" << Describe(job.leaked());
  std::printf("[ timing ] 3-node Ray TorchTrainer job through the launchers: %.1f s\n",
              job.seconds());
}

TEST(Ray, FailingEntrypointEndsTheJobWithItsExitCode) {
  if (!VenvHasModule("ray")) GTEST_SKIP() << "no ray in " << VenvPython();
  RayJob job;
  // Connects to the cluster as a driver, then fails with a code of its own.
  job.Run({VenvPython(), "-c",
           "import ray, sys\n"
           "ray.init()\n"
           "print('RAY_FAIL nodes=%d' % sum(n['Alive'] for n in ray.nodes()), flush=True)\n"
           "sys.exit(3)\n"},
          180);
  ASSERT_FALSE(job.timed_out()) << job.Logs();
  EXPECT_EQ(job.node(0).exit_code, 3) << job.Logs();
  EXPECT_NE(job.node(0).termination.find("\"exitCode\":3"), std::string::npos)
      << job.node(0).termination;
  // The workers learn it from the rendezvous: another pod failed.
  for (int n = 1; n < kNodes; ++n) EXPECT_EQ(job.node(n).exit_code, 75) << job.Logs();
  std::vector<std::string> lines = job.Lines("RAY_FAIL ");
  ASSERT_EQ(lines.size(), 1u) << job.Logs();
  EXPECT_EQ(lines[0], "RAY_FAIL nodes=3");
  EXPECT_TRUE(job.Lines("lockstep-ray: the job succeeded").empty()) << job.Logs();
  EXPECT_TRUE(job.leaked().empty()) << "left running:\n" << Describe(job.leaked());
  std::printf("[ timing ] 3-node Ray job with a failing entrypoint: %.1f s\n", job.seconds());
}

}  // namespace
}  // namespace lockstep::launcher::testing
