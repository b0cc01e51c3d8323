#include "tests/launcher/frameworks/pod_driver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/testing/host_state.h"

extern char** environ;

namespace lockstep::launcher::testing {
namespace {

using frameworks::ChildPlan;
using frameworks::ChildProcess;

struct Running {
  ChildResult result;
  pid_t pid = -1;
  std::string log_path;
  bool done = false;
};

// Environment of a child, built before fork (no allocation may happen after it).
std::vector<std::string> ChildEnv(const ChildProcess& c, const JobSpec& spec) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : c.env_defaults) env.emplace(k, v);
  // A training process that dies of a signal prints every thread's Python stack first (CI once
  // saw TensorFlow's parameter-server chief end in SIGSEGV with nothing to say where).
  env.emplace("PYTHONFAULTHANDLER", "1");
  for (const auto& [k, v] : spec.env) env[k] = v;
  for (const auto& [k, v] : c.env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

pid_t SpawnChild(const ChildProcess& c, const JobSpec& spec, const std::string& log_path) {
  std::vector<std::string> env = ChildEnv(c, spec);
  std::vector<char*> argv;
  for (const std::string& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string root = RepoRoot();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  if (::chdir(root.c_str()) != 0) ::_exit(126);
  ::execvpe(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

void Reap(std::vector<Running>& procs, bool block) {
  for (Running& r : procs) {
    if (r.done) continue;
    int status = 0;
    pid_t got = ::waitpid(r.pid, &status, block ? 0 : WNOHANG);
    if (got != r.pid) continue;
    r.done = true;
    r.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
                                           : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
}

bool AllDone(const std::vector<Running>& procs) {
  for (const Running& r : procs) {
    if (!r.done) return false;
  }
  return true;
}

void SignalAll(std::vector<Running>& procs, int sig) {
  for (Running& r : procs) {
    if (!r.done) ::kill(-r.pid, sig);
  }
}

// SIGTERM, a grace period, then SIGKILL, as the launcher stops children.
void StopAll(std::vector<Running>& procs, std::chrono::seconds grace) {
  SignalAll(procs, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!AllDone(procs) && std::chrono::steady_clock::now() < deadline) {
    Reap(procs, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  SignalAll(procs, SIGKILL);
  Reap(procs, true);
}

}  // namespace

std::string RepoRoot() { return LOCKSTEP_SOURCE_DIR; }

std::string VenvPython() {
  const char* venv = std::getenv("LOCKSTEP_VENV");
  return std::string(venv != nullptr ? venv : RepoRoot() + "/.venv") + "/bin/python";
}

bool VenvHasModule(const std::string& module) {
  const std::string cmd = VenvPython() + " -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

World MakeWorld(const JobSpec& spec, int node_rank, int master_port, int kv_port,
                const std::vector<int>& pod_ports) {
  World w;
  w.run_id = "test-run";
  w.framework = spec.framework;
  w.restart_count = spec.restart_count;
  w.max_restarts = spec.max_restarts;
  w.node_rank = node_rank;
  w.nnodes = static_cast<int>(spec.pods.size());
  int rank = 0;
  for (size_t i = 0; i < spec.pods.size(); ++i) {
    PeerInfo p;
    p.node_rank = static_cast<int>(i);
    p.role = spec.pods[i].role;
    p.role_index = spec.pods[i].role_index;
    p.host = spec.distinct_hosts ? "127.0.0." + std::to_string(i + 1) : "127.0.0.1";
    p.port = pod_ports[i];
    p.nproc = spec.pods[i].nproc;
    p.first_rank = rank;
    rank += p.nproc;
    w.peers.push_back(p);
  }
  w.world_size = rank;
  w.peers_complete = true;
  w.master_addr = w.peers[0].host;
  w.master_port = master_port;
  w.kv_port = kv_port;
  w.extra = spec.extra;
  return w;
}

std::vector<std::string> JobResult::Lines(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const ChildResult& c : children) {
    std::istringstream in(c.output);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with(prefix)) out.push_back(line);
    }
  }
  return out;
}

std::string JobResult::AllOutput() const {
  std::string out;
  for (const ChildResult& c : children) {
    out += "---- node " + std::to_string(c.node_rank) + " local " + std::to_string(c.local_rank) +
           " exit " + std::to_string(c.exit_code) + "\n" + c.output;
  }
  return out;
}

JobResult RunJob(const JobSpec& spec) {
  JobResult job;
  std::vector<int> pod_ports;
  for (size_t i = 0; i < spec.pods.size(); ++i) pod_ports.push_back(FreePort());
  const int master_port = FreePort();
  const int kv_port = FreePort();

  std::vector<ChildPlan> plans;
  for (int n = 0; n < static_cast<int>(spec.pods.size()); ++n) {
    StatusOr<ChildPlan> plan =
        frameworks::PlanChildren(MakeWorld(spec, n, master_port, kv_port, pod_ports), spec.command);
    if (!plan.ok()) {
      job.children.push_back({n, 0, -1, "PlanChildren: " + plan.status().ToString()});
      return job;
    }
    plans.push_back(*plan);
  }
  // Node 0's services, as the launcher core hosts them.
  stores::TcpStoreServer tcp_store;
  std::optional<stores::GlooKvServer> gloo_kv;
  if (plans[0].services.tcp_store && !tcp_store.Start("127.0.0.1", master_port).ok()) return job;
  if (plans[0].services.gloo_kv) {
    gloo_kv.emplace(plans[0].services.gloo_scope_sizes);
    if (!gloo_kv->Start("127.0.0.1", kv_port).ok()) return job;
  }

  char dir_template[] = "/tmp/lockstep-fwtest-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  std::vector<Running> procs;
  for (size_t n = 0; n < plans.size(); ++n) {
    for (const ChildProcess& c : plans[n].children) {
      Running r;
      r.result = {static_cast<int>(n), c.local_rank, -1, ""};
      r.log_path = dir + "/n" + std::to_string(n) + "-l" + std::to_string(c.local_rank) + ".log";
      r.pid = SpawnChild(c, spec, r.log_path);
      procs.push_back(std::move(r));
    }
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec.timeout_s);
  while (true) {
    Reap(procs, false);
    bool decided = false;
    for (const Running& r : procs) {
      if (r.done && r.result.node_rank == spec.decisive_node) decided = true;
      if (r.done && spec.fail_fast && r.result.exit_code != 0) decided = true;
    }
    if (decided || AllDone(procs)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      job.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  StopAll(procs, std::chrono::seconds(15));
  for (Running& r : procs) {
    r.result.output = ::lockstep::testing::ReadWholeFile(r.log_path);
    ::unlink(r.log_path.c_str());
    job.children.push_back(r.result);
  }
  ::rmdir(dir.c_str());
  return job;
}

}  // namespace lockstep::launcher::testing
