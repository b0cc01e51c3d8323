#include "tests/integration/peer_loss/launcher_gang.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "operator/api/children.h"

namespace lockstep::testing {
namespace {

using launcher::testing::LauncherProcess;
using launcher::testing::LauncherSpec;

int Shell(const std::string& command) { return std::system(command.c_str()); }

std::string Port() { return std::to_string(api::kRdzvPort); }

// The address launcher i joins node 0's server through (all of 127/8 is on lo).
std::string JoinAddress(size_t i) { return "127.77.0." + std::to_string(i + 1); }

}  // namespace

StatusOr<std::unique_ptr<LauncherGang>> LauncherGang::Start(std::vector<GangPod> pods,
                                                            GangOptions options) {
  std::unique_ptr<LauncherGang> g(new LauncherGang());
  g->pods_ = std::move(pods);
  g->options_ = std::move(options);
  for (const GangPod& p : g->pods_) {
    if (p.ip.empty()) return FailedPreconditionError("pod " + p.name + " has no IP");
    if (Shell("ip addr add " + p.ip + "/32 dev lo") != 0) {
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
        p.spare_index < 0 ? std::vector<std::string>{"--node-rank", std::to_string(i)}
                          : std::vector<std::string>{"--spare", "--role-index",
                                                     std::to_string(p.spare_index)};
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
  const std::string rule = "-d " + pods_.at(i).ip + " -p tcp --dport " + Port() + " -j DROP";
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
  std::vector<std::string> rules = {"-d " + join + " -p tcp --dport " + Port() + " -j DROP",
                                    "-s " + join + " -p tcp --sport " + Port() + " -j DROP"};
  if (from_operator_too) {
    rules.push_back("-d " + pods_.at(i).ip + " -p tcp --dport " + Port() + " -j DROP");
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
