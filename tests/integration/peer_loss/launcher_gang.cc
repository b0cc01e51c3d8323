#include "tests/integration/peer_loss/launcher_gang.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "operator/api/children.h"
#include "tests/testing/host_state.h"

namespace lockstep::testing {
namespace {

using launcher::testing::LauncherProcess;
using launcher::testing::LauncherSpec;

int Shell(const std::string& command) { return std::system(command.c_str()); }

std::string Port() { return std::to_string(api::kRdzvPort); }

// The address launcher i joins node 0's server through (all of 127/8 is on lo).
std::string JoinAddress(size_t i) { return "127.77.0." + std::to_string(i + 1); }

// Every rule and address a gang adds names the process that added it, so a later gang can
// remove what a process that died before its destructors (SIGKILLed at a ctest TIMEOUT, a killed
// CI run) left behind: a stale DROP rule on a kwok pod IP cuts the next test's launchers off.
std::string RuleTag(pid_t pid) { return "lockstep-gang-" + std::to_string(pid); }
// An address label must start with the device's name and fit IFNAMSIZ (15 characters).
std::string AddressLabel(pid_t pid) { return "lo:g" + std::to_string(pid); }

std::string DropRule(const std::string& match) {
  return match + " -m comment --comment " + RuleTag(getpid()) + " -j DROP";
}

// The lines `command` prints.
std::vector<std::string> CommandLines(const std::string& command) {
  std::vector<std::string> lines;
  std::istringstream out(::lockstep::testing::ShellOutput(command));
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  return lines;
}

// The pid after `prefix` in `text` when no such process exists any more; 0 otherwise (none
// named, or alive: kill(pid, 0) fails with ESRCH only for a pid no process has).
pid_t DeadOwner(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return 0;
  const pid_t pid = static_cast<pid_t>(std::atol(text.c_str() + at + prefix.size()));
  if (pid <= 0) return 0;
  return kill(pid, 0) != 0 && errno == ESRCH ? pid : 0;
}

}  // namespace

int LauncherGang::RemoveLeftovers() {
  int removed = 0;
  for (const std::string& line : CommandLines("iptables -S OUTPUT 2>/dev/null")) {
    // `-A OUTPUT <spec>`: the same spec deletes it.
    if (line.rfind("-A OUTPUT ", 0) != 0 || DeadOwner(line, "--comment lockstep-gang-") == 0) {
      continue;
    }
    removed += Shell("iptables -D OUTPUT " + line.substr(10) + " 2>/dev/null") == 0 ? 1 : 0;
  }
  for (const std::string& line : CommandLines("ip -o -4 addr show dev lo 2>/dev/null")) {
    // `1: lo    inet 10.244.0.7/32 scope global lo:g4242 ...`
    if (DeadOwner(line, " lo:g") == 0) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word && word != "inet") {
    }
    if (!(words >> word)) continue;
    removed += Shell("ip addr del " + word + " dev lo 2>/dev/null") == 0 ? 1 : 0;
  }
  return removed;
}

StatusOr<std::unique_ptr<LauncherGang>> LauncherGang::Start(std::vector<GangPod> pods,
                                                            GangOptions options) {
  std::unique_ptr<LauncherGang> g(new LauncherGang());
  g->pods_ = std::move(pods);
  g->options_ = std::move(options);
  RemoveLeftovers();
  for (const GangPod& p : g->pods_) {
    if (p.ip.empty()) return FailedPreconditionError("pod " + p.name + " has no IP");
    if (Shell("ip addr add " + p.ip + "/32 dev lo label " + AddressLabel(getpid())) != 0) {
      return FailedPreconditionError("cannot add " + p.ip + " to lo (root needed)");
    }
    g->addresses_.push_back(p.ip);
  }
  size_t gang = 0;
  for (const GangPod& p : g->pods_) gang += p.spare_index < 0 ? 1 : 0;
  const std::string nnodes = std::to_string(gang);
  for (size_t i = 0; i < g->pods_.size(); ++i) {
    const GangPod& p = g->pods_[i];
    const GangOptions& o = g->options_;
    LauncherSpec s;
    const std::vector<std::string> identity =
        p.spare_index < 0
            ? std::vector<std::string>{"--node-rank", std::to_string(i)}
            : std::vector<std::string>{"--spare", "--role-index", std::to_string(p.spare_index)};
    s.args = {"--nnodes",         nnodes,
              "--nproc-per-node", std::to_string(o.nproc),
              "--rdzv-endpoint",  (i == 0 ? p.ip : JoinAddress(i)) + ":" + Port(),
              "--rdzv-id",        o.run_id,
              "--advertise-addr", "127.0.0.1",
              "--join-timeout",   "120",
              "--grace-period",   "2",
              "--pod-name",       p.name,
              "--node-name",      p.node,
              "--pod-uid",        p.uid,
              "--heartbeat-file", o.dir + "/ckpt." + std::to_string(i)};
    s.args.insert(s.args.end(), identity.begin(), identity.end());
    s.args.insert(s.args.end(), o.launcher_args.begin(), o.launcher_args.end());
    s.command = {o.child_bin, o.dir, "--heartbeat-every", "0.1"};
    s.command.insert(s.command.end(), o.child_args.begin(), o.child_args.end());
    s.env = {{"LOCKSTEP_TOKEN", o.token}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
    g->launchers_.push_back(
        std::make_unique<LauncherProcess>(s, o.dir + "/launcher." + std::to_string(i) + ".log"));
  }
  return g;
}

LauncherGang::~LauncherGang() {
  launchers_.clear();  // SIGKILLs what is left
  for (const std::string& rule : rules_) Shell("iptables -D OUTPUT " + rule + " 2>/dev/null");
  for (const std::string& a : addresses_) Shell("ip addr del " + a + "/32 dev lo 2>/dev/null");
}

Status LauncherGang::Kill(size_t i) {
  launchers_.at(i)->Signal(SIGKILL);
  const std::string rule = DropRule("-d " + pods_.at(i).ip + " -p tcp --dport " + Port());
  if (Shell("iptables -I OUTPUT " + rule) != 0) {
    return FailedPreconditionError("iptables refused: " + rule);
  }
  rules_.push_back(rule);
  return Status::Ok();
}

Status LauncherGang::Freeze(size_t i) {
  launchers_.at(i)->Signal(SIGSTOP);
  return Partition(i, /*from_operator_too=*/true);
}

Status LauncherGang::Partition(size_t i, bool from_operator_too) {
  const std::string join = JoinAddress(i);
  std::vector<std::string> rules = {DropRule("-d " + join + " -p tcp --dport " + Port()),
                                    DropRule("-s " + join + " -p tcp --sport " + Port())};
  if (from_operator_too) {
    rules.push_back(DropRule("-d " + pods_.at(i).ip + " -p tcp --dport " + Port()));
  }
  for (const std::string& rule : rules) {
    if (Shell("iptables -I OUTPUT " + rule) != 0) {
      return FailedPreconditionError("iptables refused: " + rule);
    }
    rules_.push_back(rule);
  }
  return Status::Ok();
}

void LauncherGang::Heal(size_t i) {
  const std::string& ip = pods_.at(i).ip;
  const std::string join = JoinAddress(i);
  for (auto it = rules_.begin(); it != rules_.end();) {
    if (it->find(" " + ip + " ") != std::string::npos ||
        it->find(" " + join + " ") != std::string::npos) {
      Shell("iptables -D OUTPUT " + *it + " 2>/dev/null");
      it = rules_.erase(it);
    } else {
      ++it;
    }
  }
}

std::chrono::system_clock::time_point LauncherGang::LastCheckpoint(size_t i) const {
  std::chrono::system_clock::time_point last{};
  for (int local = 0; local < options_.nproc; ++local) {
    struct stat st {};
    const std::string path =
        options_.dir + "/ckpt." + std::to_string(i) + "." + std::to_string(local);
    if (::stat(path.c_str(), &st) != 0) continue;
    const auto t = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    last = std::max(last, t);
  }
  return last;
}

bool LauncherGang::WaitChildren(std::chrono::seconds timeout) const {
  size_t gang = 0;  // a standby spare runs no children
  for (const GangPod& p : pods_) gang += p.spare_index < 0 ? 1 : 0;
  return launcher::testing::WaitForFiles(options_.dir, "env.0.",
                                         gang * static_cast<size_t>(options_.nproc), timeout);
}

std::string LauncherGang::Logs() const {
  std::string out;
  for (const auto& l : launchers_) out += l->Log();
  return out;
}

}  // namespace lockstep::testing
