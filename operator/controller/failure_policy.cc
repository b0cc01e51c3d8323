#include "operator/controller/failure_policy.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/api/time.h"
#include "operator/controller/inplace_policy.h"
#include "operator/controller/launcher_termination.h"
#include "protocol/contract.h"
#include "protocol/termination.h"

namespace lockstep::controller {
namespace {

namespace contract = protocol::contract;

// Pod status reasons of a pod the node or the cluster took away (kubelet eviction, graceful node
// shutdown, preemption), as opposed to one whose containers failed.
constexpr std::array<std::string_view, 6> kDisruptedPodReasons = {
    "Evicted", "Preempting", "Shutdown", "NodeShutdown", "Terminated", "NodeLost"};

// The container whose termination explains the pod's failure: the first that exited non-zero,
// else the first that terminated at all.
const kube::ContainerStatus* CulpritContainer(const kube::Pod& pod, bool* is_trainer) {
  const kube::ContainerStatus* first_terminated = nullptr;
  for (size_t i = 0; i < pod.container_statuses.size(); ++i) {
    const kube::ContainerStatus& c = pod.container_statuses[i];
    if (c.state != "terminated") continue;
    if (c.exit_code.value_or(0) != 0) {
      *is_trainer = i == 0;
      return &c;
    }
    if (first_terminated == nullptr) {
      first_terminated = &c;
      *is_trainer = i == 0;
    }
  }
  return first_terminated;
}

std::string Describe(const kube::Pod& pod, const kube::ContainerStatus* c) {
  std::string out = "pod " + pod.meta.name + " failed";
  if (!pod.node_name.empty()) out += " on node " + pod.node_name;
  if (c != nullptr) {
    out += ": container " + c->name;
    if (c->exit_code) out += " exited with code " + std::to_string(*c->exit_code);
    if (c->signal) out += " (signal " + std::to_string(*c->signal) + ")";
    if (!c->reason.empty()) out += " (" + c->reason + ")";
    if (!c->message.empty()) out += ": " + DescribeTermination(c->message);
  } else if (!pod.reason.empty() || !pod.message.empty()) {
    out += ": " + pod.reason + (pod.message.empty() ? "" : ": " + pod.message);
  }
  return out;
}

// The launcher's termination message counts the in-place restarts it made (launcher.md).
int32_t InPlaceRestarts(const kube::ContainerStatus* c) {
  if (c == nullptr) return 0;
  const std::optional<protocol::TerminationMessage> m = protocol::DecodeTermination(c->message);
  return m ? m->restart_count : 0;
}

bool Unfinished(const kube::Pod& pod) { return pod.phase != "Succeeded"; }

// A pod being deleted whose launcher was stopped by a signal (termination reason "terminated"):
// the kubelet's SIGTERM of a deletion nobody marked (`kubectl delete pod`, a controller that
// deletes instead of evicting). Its ranks did not fail; the launcher now exits 143 there, where it
// exited 0 before, so without this the pod read as the job's failure.
bool DeletedUnderItsLauncher(const kube::Pod& pod) {
  if (!pod.meta.deletion_timestamp) return false;
  return std::any_of(pod.container_statuses.begin(), pod.container_statuses.end(),
                     [](const kube::ContainerStatus& c) {
                       if (c.state != "terminated") return false;
                       const std::optional<protocol::TerminationMessage> m =
                           protocol::DecodeTermination(c.message);
                       return m && m->reason == protocol::FailureReason::kTerminated;
                     });
}

// Step 1: lost nodes under unfinished pods of the attempt.
std::optional<FailureDecision> LostNodeFinding(
    const std::vector<kube::Pod>& pods, const std::map<std::string, NodeVerdict>& lost_nodes) {
  std::map<std::string, std::vector<std::string>> pods_by_node;  // sorted by node name
  for (const kube::Pod& pod : pods) {
    if (!Unfinished(pod) || pod.node_name.empty()) continue;
    auto it = lost_nodes.find(pod.node_name);
    if (it != lost_nodes.end() && it->second.lost) pods_by_node[pod.node_name].push_back(pod.meta.name);
  }
  if (pods_by_node.empty()) return std::nullopt;
  FailureDecision d{FailureAction::kRestart, FailureKind::kDisruption, "", "", true, {}, 0, {}};
  for (const auto& [node, names] : pods_by_node) {
    const NodeVerdict& v = lost_nodes.at(node);
    if (d.reason.empty()) d.reason = v.reason;
    std::string pods_list;
    for (const std::string& n : names) pods_list += (pods_list.empty() ? "" : ", ") + n;
    d.message += (d.message.empty() ? "" : "; ") + v.message + " (pods " + pods_list + ")";
    d.lost_nodes.push_back(node);
    if (v.failed_at && (!d.failed_at || *v.failed_at < *d.failed_at)) d.failed_at = v.failed_at;
  }
  return d;
}

// Step 2: pods evicted, preempted or shut down with their node.
std::optional<FailureDecision> DisruptionFinding(const std::vector<kube::Pod>& pods) {
  for (const kube::Pod& pod : pods) {
    if (!Unfinished(pod) || !IsDisrupted(pod)) continue;
    std::string why = pod.reason + (pod.message.empty() ? "" : ": " + pod.message);
    if (const kube::Condition* c = pod.FindCondition("DisruptionTarget")) {
      why = c->reason + (c->message.empty() ? "" : ": " + c->message);
    } else if (why.empty() && DeletedUnderItsLauncher(pod)) {
      why = "deleted while its launcher ran (stopped by a signal)";
    }
    FailureDecision d{FailureAction::kRestart, FailureKind::kDisruption, "PodDisrupted",
                      "pod " + pod.meta.name + " was disrupted" +
                          (pod.node_name.empty() ? "" : " on node " + pod.node_name) +
                          (why.empty() ? "" : ": " + why),
                      true, {}, 0, {}};
    return d;
  }
  return std::nullopt;
}

// Step 3: the failed pod that caused the others to fail: not a launcher's "peer lost" (75)
// when another exit code exists, and among those the one that finished first (RFC 3339 UTC
// times of one format compare as strings; an unknown time sorts last).
const kube::Pod* CulpritPod(const std::vector<kube::Pod>& pods) {
  const kube::Pod* best = nullptr;
  std::pair<bool, std::string> best_key;
  for (const kube::Pod& pod : pods) {
    if (pod.phase != "Failed") continue;
    bool is_trainer = false;
    const kube::ContainerStatus* c = CulpritContainer(pod, &is_trainer);
    const bool peer_lost = c != nullptr && c->exit_code.value_or(0) == contract::kExitPeerLost;
    std::string finished = c != nullptr && !c->finished_at.empty() ? c->finished_at : "~";
    std::pair<bool, std::string> key{peer_lost, std::move(finished)};
    if (best == nullptr || key < best_key) {
      best = &pod;
      best_key = std::move(key);
    }
  }
  return best;
}

std::string ReasonForExitCode(const kube::ContainerStatus* c) {
  if (c == nullptr || !c->exit_code) return "PodFailed";
  if (c->reason == "OOMKilled") return "OOMKilled";
  switch (*c->exit_code) {
    case contract::kExitHang: return "Hang";
    case contract::kExitRefused: return "RendezvousRefused";
    case contract::kExitJoinTimeout: return "RendezvousTimeout";
    case contract::kExitInternal: return "LauncherError";
    default: return "PodFailed";
  }
}

std::optional<FailureDecision> PodFailureFinding(const api::TrainingJobSpec& spec,
                                                 const std::vector<kube::Pod>& pods) {
  const kube::Pod* pod = CulpritPod(pods);
  if (pod == nullptr) return std::nullopt;
  bool is_trainer = false;
  const kube::ContainerStatus* c = CulpritContainer(*pod, &is_trainer);
  FailureDecision d{FailureAction::kRestart, FailureKind::kFailure, ReasonForExitCode(c),
                    Describe(*pod, c), true, {}, InPlaceRestarts(c), {}};
  if (c != nullptr && c->exit_code.value_or(0) == contract::kExitPeerLost) {
    d.awaiting_culprit = std::any_of(pods.begin(), pods.end(), [](const kube::Pod& other) {
      return other.phase == "Running" || other.phase == "Pending";
    });
  }
  if (c != nullptr && !c->finished_at.empty()) {
    if (StatusOr<api::Time> t = api::ParseTime(c->finished_at); t.ok()) d.failed_at = *t;
  }
  if (c != nullptr && c->exit_code) {
    const api::FailureRule* rule =
        MatchFailureRule(spec.failure_policy.rules, c->name, is_trainer, *c->exit_code);
    const std::string rule_name = rule == nullptr ? "" : (rule->name.empty() ? "#" : rule->name);
    if (rule != nullptr && rule->action == api::RuleAction::kFailJob) {
      d.action = FailureAction::kFailJob;
      d.reason = "FailJobRule";
      d.message += "; failure rule " + rule_name + " says FailJob";
    } else if (rule != nullptr && rule->action == api::RuleAction::kRestartJobAndIgnoreMaxRestarts) {
      d.counts = false;
      d.message += "; failure rule " + rule_name + " restarts without counting";
    }
  }
  return d;
}

// Step 3: a member of the running gang someone else deleted, with no reason above (GoneMembers).
std::optional<FailureDecision> GoneMemberFinding(const std::vector<kube::Pod>& gone) {
  if (gone.empty()) return std::nullopt;
  std::string names;
  for (const kube::Pod& pod : gone) {
    names += (names.empty() ? "" : ", ") + pod.meta.name + " (on node " + pod.node_name + ")";
  }
  FailureDecision d;
  d.action = FailureAction::kRestart;
  d.kind = FailureKind::kDisruption;
  d.reason = "PodDeleted";
  d.message = "pod" + std::string(gone.size() > 1 ? "s " : " ") + names +
              " of the running gang deleted, not by the operator, and gone";
  return d;
}

// Turns a restart into FailJob when its budget is used up.
void ApplyBudget(const api::TrainingJob& job, FailureDecision* d) {
  if (d->action != FailureAction::kRestart || !d->counts) return;
  const api::FailurePolicy& fp = job.spec.failure_policy;
  const api::RestartCounts& used = job.status.restarts;
  if (d->kind == FailureKind::kDisruption && used.disruptions >= fp.max_disruptions) {
    d->action = FailureAction::kFailJob;
    d->message += "; failurePolicy.maxDisruptions (" + std::to_string(fp.max_disruptions) +
                  ") used up";
    d->reason = "MaxDisruptionsExceeded";
  } else if (d->kind == FailureKind::kFailure &&
             FailureRestartsLeft(job, d->in_place_restarts) == 0) {
    d->action = FailureAction::kFailJob;
    d->message += "; failurePolicy.maxRestarts (" + std::to_string(fp.max_restarts) +
                  ") used up";
    if (d->in_place_restarts > 0) {
      d->message += " (" + std::to_string(d->in_place_restarts) + " of them in place)";
    }
    d->reason = "MaxRestartsExceeded";
  }
}

}  // namespace

bool IsDisrupted(const kube::Pod& pod) {
  if (const kube::Condition* c = pod.FindCondition("DisruptionTarget")) {
    if (c->status == "True") return true;
  }
  return pod.phase == "Failed" &&
         (std::find(kDisruptedPodReasons.begin(), kDisruptedPodReasons.end(), pod.reason) !=
              kDisruptedPodReasons.end() ||
          DeletedUnderItsLauncher(pod));
}

std::vector<kube::Pod> GoneMembers(const api::TrainingJob& job, int32_t desired,
                                   const std::vector<kube::Pod>& pods,
                                   const std::vector<kube::Pod>& gone_pods) {
  // Each missing member once, by its stable name, in its newest last state (oldest come first).
  std::set<std::string> present;
  for (const kube::Pod& pod : pods) present.insert(pod.meta.name);
  std::map<std::string, const kube::Pod*> missing;
  for (const kube::Pod& pod : gone_pods) {
    if (pod.node_name.empty() || pod.IsTerminal() || present.count(pod.meta.name) != 0) continue;
    missing[pod.meta.name] = &pod;
  }
  if (missing.empty()) return {};
  // Ran whole: the status says so, or the members left all run and the missing ones ran when
  // they went. Members running one after another never make a whole gang: a bind the scheduler
  // undid and retried leaves a Running pod gone for each try, with the rest still Pending.
  auto running = [](const kube::Pod& pod) { return pod.phase == "Running"; };
  const bool ran = api::IsConditionTrue(job.status.conditions, api::kConditionRunning) ||
                   (static_cast<int64_t>(present.size() + missing.size()) >= desired &&
                    std::all_of(pods.begin(), pods.end(), running) &&
                    std::all_of(missing.begin(), missing.end(),
                                [&](const auto& m) { return running(*m.second); }));
  if (!ran) return {};
  std::vector<kube::Pod> gone;
  for (const auto& [name, pod] : missing) gone.push_back(*pod);
  return gone;
}

FailureDecision StartupTimeoutFailure(const api::TrainingJob& job,
                                      const api::Condition& startup_failing) {
  const int32_t timeout = job.spec.run_policy.startup_timeout_seconds;
  FailureDecision d;
  d.action = FailureAction::kRestart;
  d.kind = FailureKind::kFailure;
  d.reason = startup_failing.reason;
  d.message = startup_failing.message + "; failing to start for " + std::to_string(timeout) +
              "s (spec.runPolicy.startupTimeoutSeconds)";
  d.failed_at = startup_failing.last_transition_time + std::chrono::seconds(timeout);
  ApplyBudget(job, &d);
  return d;
}

FailureDecision DecideFailure(const api::TrainingJob& job, const std::vector<kube::Pod>& pods,
                              const std::map<std::string, NodeVerdict>& lost_nodes,
                              const std::vector<kube::Pod>& gone) {
  // Steps 1 and 2 read a gone member as they read a present one: its last state names its node
  // and any DisruptionTarget. The copy only when there is one (every pass of every job comes here).
  std::vector<kube::Pod> with_gone;
  if (!gone.empty()) {
    with_gone = pods;
    with_gone.insert(with_gone.end(), gone.begin(), gone.end());
  }
  const std::vector<kube::Pod>& members = gone.empty() ? pods : with_gone;
  std::optional<FailureDecision> d = LostNodeFinding(members, lost_nodes);
  if (!d) d = DisruptionFinding(members);
  if (!d) d = GoneMemberFinding(gone);
  if (!d) d = PodFailureFinding(job.spec, pods);
  if (!d) return {};
  // The in-place failures the operator recorded while the launchers ran are in
  // restarts.failures already; the termination message's restartCount counts them again.
  d->in_place_restarts = UnrecordedInPlaceFailures(job.status, d->in_place_restarts);
  ApplyBudget(job, &*d);
  return *d;
}

}  // namespace lockstep::controller
