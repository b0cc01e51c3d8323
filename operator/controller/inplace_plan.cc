#include "operator/controller/inplace_plan.h"

#include <algorithm>

#include "common/enum_names.h"
#include "operator/api/children.h"
#include "operator/api/enums.h"
#include "operator/api/ranks.h"
#include "operator/controller/elastic_policy.h"
#include "operator/controller/inplace_policy.h"
#include "operator/controller/job_status.h"
#include "operator/controller/pod_attempt.h"
#include "operator/controller/launcher_termination.h"
#include "operator/controller/restart_plan.h"
#include "protocol/termination.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;


// The pod of node rank `node_rank` in the current attempt, by name.
std::string PodOfNode(const Pass& p, int32_t node_rank) {
  const std::vector<api::PodSlot> slots = api::PodSlots(p.spec, p.spec.replicas);
  if (node_rank < 0 || static_cast<size_t>(node_rank) >= slots.size()) {
    return "node rank " + std::to_string(node_rank);
  }
  const api::PodSlot& slot = slots[static_cast<size_t>(node_rank)];
  return "pod " + api::PodName(p.job.metadata.name, slot.role, slot.index);
}

std::string DescribeFailure(const Pass& p, const protocol::RoundFailure& f) {
  std::string out;
  if (f.rank >= 0) {
    out = "rank " + std::to_string(f.rank);
    if (f.local_rank >= 0) out += " (local rank " + std::to_string(f.local_rank) + ")";
    out += " on " + PodOfNode(p, f.node_rank);
    if (f.signal != 0) {
      out += " was killed by signal " + std::to_string(f.signal);
    } else {
      out += " exited with code " + std::to_string(f.exit_code);
    }
  } else {
    out = PodOfNode(p, f.node_rank) + ": " +
          (f.message.empty() ? std::string(protocol::ToString(f.reason)) : f.message);
  }
  return out + StderrTailForPeople(f.stderr_tail);
}

// Every pod of the current attempt runs (none failed, none missing).
bool GangRunning(const Pass& p) {
  const PodCounts c = CountPods(p.pods);
  return c.failed == 0 && c.running >= DesiredPodCount(p.spec);
}

const LauncherObservation* Launchers(const Pass& p) {
  return p.observed.launchers ? &*p.observed.launchers : nullptr;
}

void Recreate(Pass& p, std::string reason, std::string message) {
  RestartRequest r;
  r.kind = RestartRequest::Kind::kRequested;
  r.reason = std::move(reason);
  r.message = std::move(message);
  r.counts = false;
  PlanRestart(p, r, p.pods);
}

std::string Quoted(const std::string& value) {
  return std::string(api::kAnnotationRestartRequest) + "=" + value;
}

// A pending in-place request: done, still waiting, or fall back. True when it fell back.
bool PlanPendingRequest(Pass& p) {
  api::RestartRequestStatus& req = *p.status().restart_request;
  if (req.attempt != p.job.status.attempt) {
    req.state = api::RestartRequestState::kSuperseded;  // a Recreate restart came first
    return false;
  }
  const LauncherObservation* obs = Launchers(p);
  const bool answered = obs != nullptr && obs->restart && obs->restart->request == req.value &&
                        obs->restart->answered;
  if (answered && !obs->restart->ack.accepted) {
    req.state = api::RestartRequestState::kFellBack;
    req.mode = api::RestartMode::kRecreate;
    Recreate(p, "InPlaceRestartRefused",
             "the launchers did not restart in place (" + obs->restart->ack.message + ") for " +
                 Quoted(req.value));
    return true;
  }
  if (answered && req.round < 0) req.round = static_cast<int32_t>(obs->restart->ack.round);
  if (req.round >= 0 && obs != nullptr && obs->answered &&
      static_cast<int32_t>(obs->status.round) > req.round && obs->status.running) {
    req.state = api::RestartRequestState::kCompleted;
    return false;
  }
  const api::Time deadline =
      req.time + seconds(p.job.spec.failure_policy.in_place_timeout_seconds);
  if (p.now >= deadline) {
    req.state = api::RestartRequestState::kFellBack;
    req.mode = api::RestartMode::kRecreate;
    std::string why = "the launchers did not form and start a new round within " +
                      std::to_string(p.job.spec.failure_policy.in_place_timeout_seconds) +
                      "s (failurePolicy.inPlaceTimeoutSeconds)";
    if (obs != nullptr && obs->restart && !obs->restart->answered && !obs->restart->error.empty()) {
      why += "; the Restart request got no answer: " + obs->restart->error;
    }
    Recreate(p, "InPlaceRestartTimeout", why + " after " + Quoted(req.value));
    return true;
  }
  p.RequeueIn(std::min<seconds>(kLauncherPendingPollInterval,
                                std::chrono::duration_cast<seconds>(deadline - p.now)));
  return false;
}

}  // namespace

const kube::Pod* RendezvousPod(const api::TrainingJob& job, const std::vector<kube::Pod>& pods) {
  api::TrainingJobSpec spec = job.spec;
  spec.replicas = AttemptWorkers(job);
  const std::vector<api::PodSlot> slots = api::PodSlots(spec, spec.replicas);
  if (slots.empty()) return nullptr;
  const std::string name = api::PodName(job.metadata.name, slots.front().role,
                                        slots.front().index);
  for (const kube::Pod& pod : pods) {
    if (pod.meta.name == name && PodAttempt(pod) == job.status.attempt) return &pod;
  }
  return nullptr;
}

std::string InPlaceReason(protocol::FailureReason launcher_reason) {
  // The restart reasons a launcher's failure maps to; any other failure is a rank's.
  static constexpr NameTable<protocol::FailureReason, 3> kReasons = {{
      {protocol::FailureReason::kHang, "Hang"},
      {protocol::FailureReason::kPeerLost, "PeerLost"},
      {protocol::FailureReason::kLauncher, "LauncherError"},
  }};
  return std::string(NameOf(kReasons, launcher_reason, "RankFailed"));
}

namespace {

// Records the in-place restarts among `failures` and `requested` (the launchers' totals for the
// current attempt) that status does not hold yet. `failure`: the cause of the last failed round,
// when known.
void RecordInPlace(Pass& p, int32_t failures, int32_t requested, std::optional<int32_t> round,
                   const protocol::RoundFailure* failure) {
  const int32_t attempt = p.job.status.attempt;
  const InPlaceRecord record = RecordLauncherTotals(p.job.status, failures, requested, round);
  const int32_t new_failures = record.new_failures;
  p.status().rendezvous = record.rendezvous;
  if (record.new_failures + record.new_requested == 0) return;

  api::RestartCounts& counts = p.status().restarts;
  CountInPlaceRestarts(counts, record.new_failures, record.new_requested);
  const std::string now_at = round ? " (now round " + std::to_string(*round) + ")" : "";
  std::string reason = "RestartRequested";
  std::string message = "the launchers restarted the gang in place on request" + now_at;
  if (new_failures > 0) {
    reason = failure != nullptr ? InPlaceReason(failure->reason) : "RankFailed";
    message = (failure != nullptr ? DescribeFailure(p, *failure) : std::string("a rank failed")) +
              "; the launchers restarted the gang in place" + now_at + "; " +
              std::to_string(counts.failures) + " of failurePolicy.maxRestarts " +
              std::to_string(p.job.spec.failure_policy.max_restarts) + " used";
  }
  p.status().last_restart = api::LastRestart{
      p.now, reason, message, attempt, 0, api::RestartMode::kInPlace, {}};
  p.Event(new_failures > 0 ? "Warning" : "Normal", reason, message);
  p.plan->restart = Plan::Restart{reason, api::RestartMode::kInPlace, std::nullopt};
}

// The trainer's (the first container's) launcher termination message, if it left one.
std::optional<protocol::TerminationMessage> TrainerTermination(const kube::Pod& pod) {
  if (pod.container_statuses.empty()) return std::nullopt;
  return protocol::DecodeTermination(pod.container_statuses.front().message);
}

}  // namespace

void PlanInPlaceRecord(Pass& p) {
  const LauncherObservation* obs = Launchers(p);
  if (obs == nullptr || !obs->answered) return;
  const protocol::ControlStatus& st = obs->status;
  RecordInPlace(p, static_cast<int32_t>(st.failure_restarts),
                static_cast<int32_t>(st.requested_restarts), static_cast<int32_t>(st.round),
                st.last_failure ? &*st.last_failure : nullptr);
}

void PlanInPlaceRecordFromPods(Pass& p) {
  int32_t failures = 0, requested = 0;
  for (const kube::Pod& pod : p.pods) {
    if (pod.phase != "Succeeded" && pod.phase != "Failed") continue;
    if (std::optional<protocol::TerminationMessage> m = TrainerTermination(pod)) {
      failures = std::max(failures, m->restart_count);
      requested = std::max(requested, m->requested_restarts);
    }
  }
  RecordInPlace(p, failures, requested, std::nullopt, nullptr);
}

bool PlanRestartRequest(Pass& p) {
  auto pending = [&p] {
    return p.status().restart_request &&
           p.status().restart_request->state == api::RestartRequestState::kPending;
  };
  if (pending()) {
    if (PlanPendingRequest(p)) return true;
    if (pending()) return false;
  }
  auto it = p.job.metadata.annotations.find(std::string(api::kAnnotationRestartRequest));
  if (it == p.job.metadata.annotations.end() || it->second.empty()) return false;
  const std::string& value = it->second;
  if (p.status().restart_request && p.status().restart_request->value == value) return false;

  api::RestartRequestStatus req;
  req.value = value;
  req.time = p.now;
  req.attempt = p.job.status.attempt;
  if (p.job.spec.failure_policy.restart_mode == api::RestartMode::kRecreate) {
    req.mode = api::RestartMode::kRecreate;
    req.state = api::RestartRequestState::kRecreated;
    p.status().restart_request = req;
    Recreate(p, "RestartRequested",
             "restart requested (" + Quoted(value) + "); failurePolicy.restartMode is Recreate");
    return true;
  }
  // In place needs a gang whose every pod runs and whose launchers run a complete round; until
  // then (starting, or restarting after a failure) the request waits.
  const kube::Pod* rank0 = RendezvousPod(p.job, p.pods);
  const LauncherObservation* obs = Launchers(p);
  if (!GangRunning(p) || rank0 == nullptr) return false;
  if (obs == nullptr || (obs->answered && !obs->status.running)) {
    p.RequeueIn(kLauncherPendingPollInterval);
    return false;
  }
  if (!obs->answered) {
    req.mode = api::RestartMode::kRecreate;
    req.state = api::RestartRequestState::kFellBack;
    p.status().restart_request = req;
    Recreate(p, "InPlaceRestartUnavailable",
             "restart requested (" + Quoted(value) + "), but the launchers' rendezvous server " +
                 "did not answer (" + obs->error + "); restarting by Recreate");
    return true;
  }
  req.mode = api::RestartMode::kInPlace;
  req.state = api::RestartRequestState::kPending;
  p.status().restart_request = req;
  const std::string reason = "restart requested (" + Quoted(value) + ")";
  p.plan->launcher_restart = Plan::LauncherRestart{rank0->meta.name, value, reason};
  p.Event("Normal", "RestartRequested",
          reason + "; asking the launchers of attempt " + std::to_string(p.job.status.attempt) +
              " to restart in place (round " + std::to_string(obs->status.round) + ")");
  p.RequeueIn(kLauncherPendingPollInterval);
  return false;
}

void PlanLauncherPoll(Pass& p) {
  // Every restart mode: the answer carries the trainers' progress too (training_progress.h).
  if (!GangRunning(p)) return;
  const kube::Pod* rank0 = RendezvousPod(p.job, p.pods);
  if (rank0 == nullptr || rank0->pod_ip.empty()) return;
  p.plan->launcher_poll = rank0->meta.name;
  p.RequeueIn(kLauncherPollInterval);
}

}  // namespace lockstep::controller
