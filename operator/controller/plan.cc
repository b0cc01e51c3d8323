#include "operator/controller/plan.h"

#include <set>
#include <tuple>
#include <utility>

#include "operator/api/children.h"
#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/api/validation.h"
#include "operator/controller/clean_pod_policy.h"
#include "operator/controller/elastic_policy.h"
#include "operator/controller/endpoint_plan.h"
#include "operator/controller/failure_policy.h"
#include "operator/controller/inplace_plan.h"
#include "operator/controller/inplace_policy.h"
#include "operator/controller/job_status.h"
#include "operator/controller/kueue_plan.h"
#include "operator/controller/peer_loss_plan.h"
#include "operator/controller/plan_pass.h"
#include "operator/controller/pod_attempt.h"
#include "operator/controller/restart_plan.h"
#include "operator/controller/spare_plan.h"
#include "operator/controller/success_policy.h"
#include "operator/controller/timers.h"
#include "operator/controller/training_progress.h"

namespace lockstep::controller {
namespace {

using api::ConditionStatus;
using api::JobState;

// Stalled=True for `reason`: report, never act. The event only on a new reason or message.
void PlanStalled(Pass& p, std::string_view reason, const std::string& message,
                 const std::string& why_idle) {
  const api::Condition* stalled = api::FindCondition(p.job.status.conditions,
                                                     api::kConditionStalled);
  const bool already = stalled != nullptr && stalled->status == ConditionStatus::kTrue &&
                       stalled->reason == reason && stalled->message == message;
  p.Condition(api::kConditionStalled, true, std::string(reason), message);
  p.Condition(api::kConditionReconciling, false, std::string(reason), why_idle);
  if (!already) p.Event("Warning", std::string(reason), message);
}

// Stalled/InvalidSpec.
void PlanInvalid(Pass& p, const std::string& message) {
  PlanStalled(p, api::kReasonInvalidSpec, message,
              "the operator does not act on an invalid spec");
  p.status().reason = std::string(api::kReasonInvalidSpec);
  p.status().message = message;
}

// Stalled/InvalidStatus: a status the operator cannot fully read is never acted on (the field it
// lost may be the attempt or a counter); only the conditions are written.
void PlanUnreadableStatus(Pass& p, const std::string& error) {
  constexpr size_t kMaxMessage = 1024;
  const std::string message =
      api::BoundedMessage("the status cannot be read: " + error, kMaxMessage);
  PlanStalled(p, api::kReasonInvalidStatus, message,
              "the operator does not act on a status it cannot read");
  p.plan->conditions_only = true;
}

std::string ValidationMessage(const std::vector<api::FieldError>& errors) {
  std::string out;
  for (const api::FieldError& e : errors) {
    out += (out.empty() ? "" : "; ") + e.field + ": " + e.message;
  }
  return out;
}

std::vector<PodDeletion> FinishedDeletes(const Pass& p) {
  const api::CleanPodPolicy policy = p.job.spec.run_policy.clean_pod_policy;
  // Roles a success leaves running (ps, evaluator) cannot do anything useful: stop them even
  // under cleanPodPolicy None, which then only keeps the pods that ended by themselves.
  if (api::IsConditionTrue(p.plan->status.conditions, api::kConditionSucceeded) &&
      policy == api::CleanPodPolicy::kNone) {
    return ActivePods(p.observed.pods);
  }
  return PodsToClean(policy, p.observed.pods);
}

// A finished job: clean its pods per cleanPodPolicy and run its TTL.
void PlanFinished(Pass& p) {
  if (p.settled) {
    p.plan->pod_deletes = FinishedDeletes(p);
    ForceDeletesOnLostNodes(p);
  }
  p.Condition(api::kConditionReconciling, false, "Finished", "the job has finished");
  api::TrainingJob view = p.job;
  view.status = p.status();
  if (auto ttl = CheckTtlAfterFinished(view, p.now)) {
    if (ttl->expired) {
      p.plan->delete_job = true;
    } else {
      p.RequeueIn(ttl->remaining);
    }
  }
}

void Finish(Pass& p, Outcome outcome, const std::string& reason, const std::string& message) {
  const bool ok = outcome == Outcome::kSucceeded;
  p.Condition(ok ? api::kConditionSucceeded : api::kConditionFailed, true, reason, message);
  p.Condition(api::kConditionRunning, false, reason, "the job has finished");
  if (api::IsConditionTrue(p.status().conditions, api::kConditionRestarting)) {
    p.Condition(api::kConditionRestarting, false, reason, "the job has finished");
  }
  p.State(ok ? JobState::kSucceeded : JobState::kFailed, reason, message);
  p.status().completion_time = p.now;
  p.Event(ok ? "Normal" : "Warning", reason, message);
  p.plan->outcome = outcome;
  PlanFinished(p);
}

void PlanSuspended(Pass& p) {
  if (p.settled) {
    p.plan->pod_deletes = ActivePods(p.observed.pods);
    ForceDeletesOnLostNodes(p);
  }
  const int32_t left = CountPods(p.observed.pods).existing;  // every attempt's
  p.Condition(api::kConditionSuspended, true, "Suspended", "spec.runPolicy.suspend is true");
  p.Condition(api::kConditionRunning, false, "Suspended", "the job is suspended");
  p.Condition(api::kConditionReconciling, left > 0, "Suspended",
              left > 0 ? "deleting " + std::to_string(left) + " pods" : "all pods deleted");
  p.State(JobState::kSuspended, "Suspended", "spec.runPolicy.suspend is true; pods deleted");
  // The active deadline restarts from the resume, like the Kubernetes Job's.
  p.status().start_time.reset();
  if (!WasTrue(p.job, api::kConditionSuspended)) {
    p.Event("Normal", "Suspended", "job suspended; deleting its pods");
  }
}

// Kueue holds the job (kueue/gate.h: not admitted, evicted, or its Workload is being made): as
// suspended, its pods are deleted with their grace (they checkpoint on SIGTERM) and none is
// created; the state is Queued with Kueue's reason. Not a restart: on admission the same attempt
// starts again from its checkpoint, counting nothing against maxRestarts.
void PlanQueued(Pass& p, const kueue::Decision& d) {
  if (p.settled) {
    p.plan->pod_deletes = ActivePods(p.observed.pods);
    ForceDeletesOnLostNodes(p);
  }
  if (WasTrue(p.job, api::kConditionSuspended)) {
    p.Condition(api::kConditionSuspended, false, "Resumed", "spec.runPolicy.suspend is false");
    p.Event("Normal", "Resumed", "job resumed; waiting for Kueue to admit it");
  }
  const int32_t left = CountPods(p.observed.pods).existing;
  p.Condition(api::kConditionRunning, false, "Queued", "waiting for Kueue's admission");
  p.Condition(api::kConditionReconciling, left > 0, d.reason,
              left > 0 ? "deleting " + std::to_string(left) + " pods" : d.message);
  p.State(JobState::kQueued, d.reason, d.message);
  p.status().start_time.reset();  // time in the queue is not active time
}

// The Service, the rendezvous Secret and the NetworkPolicy outlive attempts: created whenever
// missing.
void PlanSharedChildren(Pass& p) {
  p.plan->create_service = !p.observed.service_exists;
  p.plan->create_secret = !p.observed.secret_exists;
  p.plan->create_network_policy = !p.observed.network_policy_exists;
}

// The children that are missing. Pods are created only when the cache is settled; a pod name
// still held by a terminating pod waits for that pod to go.
Status PlanCreates(Pass& p) {
  PlanSharedChildren(p);
  if (!p.settled) return Status::Ok();
  api::ChildrenOptions opts;
  opts.launcher_image = p.options.launcher_image;
  opts.attempt = p.job.status.attempt;
  if (p.job.spec.elastic) opts.worker_replicas = p.spec.replicas;
  opts.launcher_max_restarts = LauncherRestartBudget(p.job);
  if (p.placements != nullptr) opts.role_placement = *p.placements;
  SpareCreateOptions(p, &opts);
  std::set<std::string> present;
  for (const kube::Pod& pod : p.observed.pods) present.insert(pod.meta.name);
  // Only the pods this pass creates: the executor creates at most kMaxCreatesPerPass, and the
  // next pass (once the cache shows these) builds the next ones.
  LS_ASSIGN_OR_RETURN(p.plan->pod_creates,
                      api::BuildMissingPods(p.job, opts, present, kMaxCreatesPerPass));
  return Status::Ok();
}

// Why the gang's pods are not all bound. The `Scheduled` condition is the gang scheduler's, its
// one author (docs/scheduler-cycle.md): the controller never writes it, and carries it over
// unchanged in its status writes. While the scheduler explains a wait (Scheduled=False, e.g. the
// capacity it lacks) its words are the job's; otherwise the job waits for it.
std::pair<std::string, std::string> WaitingForBinds(const Pass& p) {
  const api::Condition* sched = api::FindCondition(p.plan->status.conditions,
                                                   api::kConditionScheduled);
  if (sched != nullptr && sched->status == ConditionStatus::kFalse) {
    return {sched->reason, sched->message};
  }
  return {"WaitingForScheduler", "waiting for the gang scheduler"};
}

// Conditions, state and counters of a job that is neither finished nor suspended.
void PlanProgress(Pass& p) {
  const PodCounts c = CountPods(p.pods);
  const int32_t desired = DesiredPodCount(p.spec);
  const bool running = c.running > 0 && c.running + c.succeeded >= desired;
  if (running) {
    p.Condition(api::kConditionRunning, true, "AllPodsRunning",
                "all " + std::to_string(desired) + " pods are running");
    p.Condition(api::kConditionReconciling, false, "Running", "the gang is running");
    p.State(JobState::kRunning, "AllPodsRunning",
            std::to_string(c.running) + " of " + std::to_string(desired) + " pods running");
    if (!WasTrue(p.job, api::kConditionRunning) && p.job.status.attempt == 0) {
      p.plan->became_running = true;  // time-to-running is the first attempt's
      p.Event("Normal", "Running", "all " + std::to_string(desired) + " pods are running");
    }
    PlanRecovered(p);
    return;
  }
  std::string reason;
  std::string message;
  JobState state = JobState::kScheduling;
  if (c.existing < desired) {
    state = JobState::kPending;
    reason = "CreatingPods";
    message = std::to_string(c.existing) + " of " + std::to_string(desired) + " pods created";
  } else if (c.bound < desired) {
    std::tie(reason, message) = WaitingForBinds(p);
  } else {
    reason = "StartingPods";
    message = std::to_string(c.running) + " of " + std::to_string(desired) + " pods running";
  }
  // A restarted gang that is not running yet is still restarting.
  if (api::IsConditionTrue(p.status().conditions, api::kConditionRestarting)) {
    state = JobState::kRestarting;
  }
  p.Condition(api::kConditionRunning, false, reason, message);
  p.Condition(api::kConditionReconciling, true, reason, message);
  p.State(state, reason, message);
}

void PlanCounters(Pass& p) {
  const PodCounts c = CountPods(p.pods);
  // An elastic job's status.replicas is its chosen size (the scheduler sizes the gang by it).
  p.status().replicas = p.job.spec.elastic ? p.spec.replicas : c.workers;
  p.status().ready_replicas = c.ready;
  p.status().workers_ready =
      std::to_string(c.ready) + "/" + std::to_string(DesiredPodCount(p.spec));
  p.status().selector = api::JobSelector(p.job.metadata.name);
  p.status().observed_generation = p.gen();
}

void ClearStalled(Pass& p) {
  if (api::FindCondition(p.status().conditions, api::kConditionStalled) != nullptr) {
    p.Condition(api::kConditionStalled, false, "SpecValid", "the spec is valid");
  }
}

std::optional<api::Time> RunningSince(const Pass& p) {
  const api::Condition* c = api::FindCondition(p.job.status.conditions, api::kConditionRunning);
  if (c == nullptr || c->status != ConditionStatus::kTrue) return std::nullopt;
  return c->last_transition_time;
}

// An elastic job changes size (a restart that costs no budget). True when it does.
bool PlanResize(Pass& p) {
  const ResizeCheck check = DecideResize(p.job, CountPods(p.pods), RunningSince(p), p.now);
  if (check.recheck_after) p.RequeueIn(*check.recheck_after);
  if (!check.resize) return false;
  RestartRequest r;
  r.kind = RestartRequest::Kind::kResize;
  r.reason = check.resize->reason;
  r.message = check.resize->message;
  r.counts = false;
  r.size = check.resize->size;
  PlanRestart(p, r, p.pods);
  return true;
}

// Members of the running gang someone else deleted (failure_policy.h, step 3). A job with hot
// spares keeps its own path for a missing member (spare_plan.h: a spare takes its node-rank).
std::vector<kube::Pod> GoneFromTheGang(const Pass& p) {
  if (p.spares != nullptr || p.observed.gone_pods.empty()) return {};
  return GoneMembers(p.job, DesiredPodCount(p.spec), p.pods,
                     SplitByAttempt(p.observed.gone_pods, p.job.status.attempt).current);
}

// The job is active: check its timers and pods, then create what is missing.
void PlanActive(Pass& p) {
  if (WasTrue(p.job, api::kConditionSuspended)) {
    p.Condition(api::kConditionSuspended, false, "Resumed", "spec.runPolicy.suspend is false");
    p.Event("Normal", "Resumed", "job resumed; creating its pods");
  }
  if (auto deadline = CheckActiveDeadline(p.job, p.now)) {
    if (deadline->expired) {
      Finish(p, Outcome::kFailed, "DeadlineExceeded",
             "the job was active longer than spec.runPolicy.activeDeadlineSeconds (" +
                 std::to_string(*p.job.spec.run_policy.active_deadline_seconds) + "s)");
      return;
    }
    p.RequeueIn(deadline->remaining);
  } else if (p.job.spec.run_policy.active_deadline_seconds) {
    p.RequeueIn(std::chrono::seconds(*p.job.spec.run_policy.active_deadline_seconds));
  }
  PruneExclusions(p);
  PlanSpareRecord(p);
  const int32_t stale_left = PlanStaleDeletes(p, p.stale_pods);
  const FailureDecision failure =
      DecideFailure(p.job, p.pods, p.observed.lost_nodes, GoneFromTheGang(p));
  // A lost member the launchers reported explains launchers that exited 75 ("a peer was lost")
  // better than waiting for a culprit whose node is gone, and is not the job's failure.
  if ((failure.action == FailureAction::kNone || failure.awaiting_culprit) && PlanPeerLoss(p)) {
    return;
  }
  if (failure.action != FailureAction::kNone && failure.awaiting_culprit && failure.failed_at &&
      p.now - *failure.failed_at < kCulpritWait) {
    // Only "another node failed" (75) so far; the failing pod's status usually follows within a
    // second or two. Deciding now would apply the rules to 75 instead of the real exit code.
    p.plan->requeue_after = std::chrono::seconds(2);
    PlanProgress(p);
    return;
  }
  if (failure.action == FailureAction::kFailJob) {
    Finish(p, Outcome::kFailed, failure.reason, failure.message);
    return;
  }
  if (failure.action == FailureAction::kRestart) {
    // A standby spare may have taken the lost pod's node-rank already: ask node 0 first.
    if (AwaitSparePromotion(p, failure.failed_at)) {
      PlanProgress(p);
      return;
    }
    PlanRestart(p, FromFailure(failure), p.pods);
    return;
  }
  PlanInPlaceRecord(p);
  PlanTrainingProgress(p);
  if (std::optional<std::string> success = EvaluateSuccess(p.spec, p.pods)) {
    PlanInPlaceRecordFromPods(p);  // the launchers' server may be gone: their last word
    PlanFinalProgress(p);          // and the trainers' final step
    Finish(p, Outcome::kSucceeded, "Succeeded", *success);
    return;
  }
  if (PlanRestartRequest(p)) return;
  if (PlanResize(p)) return;
  if (!p.status().start_time) p.status().start_time = p.now;
  if (PlanRestartWait(p, stale_left)) {
    PlanSharedChildren(p);
    return;
  }
  PlanSpareDeletes(p);
  if (Status s = PlanCreates(p); !s.ok()) {
    PlanInvalid(p, "cannot build the pods: " + s.message());
    return;
  }
  PlanProgress(p);
  PlanLauncherPoll(p);
}

}  // namespace

Plan ComputePlan(const CachedJob& cached, const Observed& observed, api::Time now, bool settled,
                 const PlanOptions& options) {
  Plan plan;
  plan.status = cached.job.status;
  if (cached.job.metadata.deletion_timestamp) return plan;  // the garbage collector's turn
  const AttemptPods pods = SplitByAttempt(observed.pods, cached.job.status.attempt);
  api::TrainingJobSpec spec = cached.job.spec;
  spec.replicas = AttemptWorkers(cached.job);
  // Hot spares: the plan sees the gang as it runs now (spare_plan.h).
  std::optional<SpareView> spares;
  if (cached.job.spec.failure_policy.spare_replicas > 0 || cached.job.status.spares) {
    spares = SplitSpares(spec, pods.current, CurrentServing(cached.job, observed.launchers));
  }
  Pass p{cached.job, observed, now,        settled,     options,
         &plan,      spares ? spares->gang : pods.current, pods.stale, spec};
  if (spares) p.spares = &*spares;
  if (!cached.status_error.empty()) {
    PlanUnreadableStatus(p, cached.status_error);
    return plan;
  }
  p.status().observed_generation = p.gen();
  p.status().selector = api::JobSelector(cached.job.metadata.name);
  if (!cached.spec_error.empty()) {
    PlanInvalid(p, "the spec cannot be decoded: " + cached.spec_error);
    return plan;
  }
  if (std::vector<api::FieldError> errors = api::Validate(cached.job); !errors.empty()) {
    PlanInvalid(p, ValidationMessage(errors));
    return plan;
  }
  ClearStalled(p);
  PlanCounters(p);
  const std::optional<kueue::Decision> queue = PlanKueue(p);
  if (IsFinished(cached.job.status)) {
    PlanFinished(p);
  } else if (cached.job.spec.run_policy.suspend) {
    PlanSuspended(p);
  } else if (queue && !queue->run) {
    PlanQueued(p, *queue);
  } else {
    if (queue) p.placements = &queue->placements;
    PlanActive(p);
  }
  plan.endpoint_slices = PlanEndpointSlices(cached.job, observed.pods, observed.endpoint_slices);
  return plan;
}

}  // namespace lockstep::controller
