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
#include "operator/controller/goodput.h"
#include "operator/controller/goodput_evidence.h"
#include "operator/controller/inplace_plan.h"
#include "operator/controller/inplace_policy.h"
#include "operator/controller/job_status.h"
#include "operator/controller/kueue_plan.h"
#include "operator/controller/peer_loss_plan.h"
#include "operator/controller/plan_pass.h"
#include "operator/controller/pod_attempt.h"
#include "operator/controller/restart_plan.h"
#include "operator/controller/spare_plan.h"
#include "operator/controller/startup_policy.h"
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
  // No pod of a held job is starting; a resume's pods start their timer afresh.
  api::RemoveCondition(&p.status().conditions, api::kConditionStartupFailing);
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
  api::RemoveCondition(&p.status().conditions, api::kConditionStartupFailing);
  p.status().start_time.reset();  // time in the queue is not active time
}

// The Service, the rendezvous Secret and the NetworkPolicy outlive attempts: created whenever
// missing. No cache holds the Secret (job_caches.h): the job's first pass (no status written
// yet) asks for it, and the executor makes sure of it in every pass that creates pods.
void PlanSharedChildren(Pass& p) {
  p.plan->create_service = !p.observed.service_exists;
  p.plan->create_secret = p.job.status.observed_generation == 0;
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
  // A pod that cannot start says why (step StartupFailing), unless the gang scheduler explains
  // why pods are not bound: its words stay the job's.
  const api::Condition* startup =
      api::FindCondition(p.status().conditions, api::kConditionStartupFailing);
  const api::Condition* sched = api::FindCondition(p.status().conditions,
                                                   api::kConditionScheduled);
  const bool scheduler_explains =
      c.bound < desired && sched != nullptr && sched->status == ConditionStatus::kFalse;
  if (startup != nullptr && startup->status == ConditionStatus::kTrue && !scheduler_explains) {
    reason = startup->reason;
    message = startup->message;
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

// What the steps of one pass find for later steps' rules.
struct Findings {
  explicit Findings(const CachedJob& c) : cached(c) {}
  const CachedJob& cached;
  std::optional<kueue::Decision> queue;  // unset for a job Kueue does not manage
  int32_t stale_left = 0;                // pods of older attempts that still exist
  FailureDecision failure;
};

// The steps of plan.cc's own, in table order, named as in the table (in a namespace of their own:
// several names are also types of the files they call). A claiming step returns true when it
// claims the pass; a recording step never ends it (some leave a finding for later rules).
namespace step {

bool Deleting(Pass& p, Findings&) {
  return p.job.metadata.deletion_timestamp.has_value();  // the garbage collector's turn
}

bool UnreadableStatus(Pass& p, Findings& f) {
  if (f.cached.status_error.empty()) return false;
  PlanUnreadableStatus(p, f.cached.status_error);
  return true;
}

void Identity(Pass& p) {
  p.status().observed_generation = p.gen();
  p.status().selector = api::JobSelector(p.job.metadata.name);
}

bool UndecodableSpec(Pass& p, Findings& f) {
  if (f.cached.spec_error.empty()) return false;
  PlanInvalid(p, "the spec cannot be decoded: " + f.cached.spec_error);
  return true;
}

bool InvalidSpec(Pass& p, Findings& f) {
  std::vector<api::FieldError> errors = api::Validate(f.cached.job);
  if (errors.empty()) return false;
  PlanInvalid(p, ValidationMessage(errors));
  return true;
}

void KueueDecision(Pass& p, Findings& f) {
  f.queue = PlanKueue(p);
  if (f.queue) p.placements = &f.queue->placements;  // read only by the creates of an active job
}

bool Finished(Pass& p, Findings&) {
  if (!IsFinished(p.job.status)) return false;
  PlanFinished(p);
  return true;
}

bool Suspended(Pass& p, Findings&) {
  if (!p.job.spec.run_policy.suspend) return false;
  PlanSuspended(p);
  return true;
}

bool Queued(Pass& p, Findings& f) {
  if (!f.queue || f.queue->run) return false;
  PlanQueued(p, *f.queue);
  return true;
}

void Resumed(Pass& p) {
  if (!WasTrue(p.job, api::kConditionSuspended)) return;
  p.Condition(api::kConditionSuspended, false, "Resumed", "spec.runPolicy.suspend is false");
  p.Event("Normal", "Resumed", "job resumed; creating its pods");
}

bool DeadlineExceeded(Pass& p, Findings&) {
  if (auto deadline = CheckActiveDeadline(p.job, p.now)) {
    if (deadline->expired) {
      Finish(p, Outcome::kFailed, "DeadlineExceeded",
             "the job was active longer than spec.runPolicy.activeDeadlineSeconds (" +
                 std::to_string(*p.job.spec.run_policy.active_deadline_seconds) + "s)");
      return true;
    }
    p.RequeueIn(deadline->remaining);
  } else if (p.job.spec.run_policy.active_deadline_seconds) {
    p.RequeueIn(std::chrono::seconds(*p.job.spec.run_policy.active_deadline_seconds));
  }
  return false;
}

void StaleDeletes(Pass& p, Findings& f) { f.stale_left = PlanStaleDeletes(p, p.stale_pods); }

void Failure(Pass& p, Findings& f) {
  f.failure = DecideFailure(p.job, p.pods, p.observed.lost_nodes, GoneFromTheGang(p));
}

// A lost member the launchers reported explains launchers that exited 75 ("a peer was lost")
// better than waiting for a culprit whose node is gone, and is not the job's failure.
bool PeerLoss(Pass& p, Findings& f) {
  return (f.failure.action == FailureAction::kNone || f.failure.awaiting_culprit) &&
         PlanPeerLoss(p);
}

// Only "another node failed" (75) so far; the failing pod's status usually follows within a
// second or two. Deciding now would apply the rules to 75 instead of the real exit code.
bool AwaitingCulprit(Pass& p, Findings& f) {
  const FailureDecision& d = f.failure;
  if (d.action == FailureAction::kNone || !d.awaiting_culprit || !d.failed_at ||
      p.now - *d.failed_at >= kCulpritWait) {
    return false;
  }
  p.plan->requeue_after = std::chrono::seconds(2);
  PlanProgress(p);
  return true;
}

// A pod of the attempt that cannot start (startup_policy.h): StartupFailing says so at once, and
// past spec.runPolicy.startupTimeoutSeconds the attempt fails (failure_policy.h step 5), unless
// a failure found before explains the pass.
void StartupFailing(Pass& p, Findings& f) {
  const bool was = api::FindCondition(p.status().conditions,
                                      api::kConditionStartupFailing) != nullptr;
  const std::optional<StartupFailure> failing = FindStartupFailure(
      p.pods, api::FindCondition(p.status().conditions, api::kConditionStartupFailing));
  if (!failing) {
    api::RemoveCondition(&p.status().conditions, api::kConditionStartupFailing);
    return;
  }
  p.Condition(api::kConditionStartupFailing, true, failing->reason, failing->message);
  if (!was) p.Event("Warning", std::string(api::kConditionStartupFailing), failing->message);
  if (f.failure.action != FailureAction::kNone) return;
  const std::optional<TimerCheck> timer =
      CheckStartupTimeout(p.job.spec.run_policy, p.status().conditions, p.now);
  if (!timer) return;
  if (!timer->expired) {
    p.RequeueIn(timer->remaining);
    return;
  }
  f.failure = StartupTimeoutFailure(
      p.job, *api::FindCondition(p.status().conditions, api::kConditionStartupFailing));
}

bool FailJob(Pass& p, Findings& f) {
  if (f.failure.action != FailureAction::kFailJob) return false;
  Finish(p, Outcome::kFailed, f.failure.reason, f.failure.message);
  return true;
}

// A standby spare may have taken the lost pod's node-rank already: ask node 0 first.
bool AwaitingSpare(Pass& p, Findings& f) {
  if (f.failure.action != FailureAction::kRestart || !AwaitSparePromotion(p, f.failure.failed_at)) {
    return false;
  }
  PlanProgress(p);
  return true;
}

bool FailureRestart(Pass& p, Findings& f) {
  if (f.failure.action != FailureAction::kRestart) return false;
  PlanRestart(p, FromFailure(f.failure), p.pods);
  return true;
}

bool Succeeded(Pass& p, Findings&) {
  std::optional<std::string> success = EvaluateSuccess(p.spec, p.pods);
  if (!success) return false;
  PlanInPlaceRecordFromPods(p);  // the launchers' server may be gone: their last word
  PlanFinalProgress(p);          // and the trainers' final step
  Finish(p, Outcome::kSucceeded, "Succeeded", *success);
  return true;
}

bool RestartRequest(Pass& p, Findings&) { return PlanRestartRequest(p); }

bool Resize(Pass& p, Findings&) { return PlanResize(p); }

void StartTime(Pass& p) {
  if (!p.status().start_time) p.status().start_time = p.now;
}

bool RestartWait(Pass& p, Findings& f) {
  if (!PlanRestartWait(p, f.stale_left)) return false;
  PlanSharedChildren(p);
  return true;
}

bool PodsUnbuildable(Pass& p, Findings&) {
  Status s = PlanCreates(p);
  if (s.ok()) return false;
  PlanInvalid(p, "cannot build the pods: " + s.message());
  return true;
}

bool Progress(Pass& p, Findings&) {
  PlanProgress(p);
  PlanLauncherPoll(p);
  return true;
}

}  // namespace step

// A row of the table and how it runs: exactly one of the three functions is set.
struct Step {
  PlanStep row;
  void (*record)(Pass&) = nullptr;
  void (*find)(Pass&, Findings&) = nullptr;  // records what later rules read
  bool (*claim)(Pass&, Findings&) = nullptr;
};

constexpr Step Record(std::string_view name, PlanStage stage, std::string_view owner,
                      void (*fn)(Pass&)) {
  return {{name, stage, owner, ""}, fn, nullptr, nullptr};
}
constexpr Step Find(std::string_view name, PlanStage stage, std::string_view owner,
                    void (*fn)(Pass&, Findings&)) {
  return {{name, stage, owner, ""}, nullptr, fn, nullptr};
}
constexpr Step Claim(PlanStep row, bool (*fn)(Pass&, Findings&)) {
  return {row, nullptr, nullptr, fn};
}

constexpr std::string_view kPlan = "operator/controller/plan.cc";
using enum PlanStage;

// The pass, in order: the one place its precedence is written.
const Step kSteps[] = {
    Claim({"Deleting", kGate, kPlan, "metadata.deletionTimestamp is set"}, step::Deleting),
    Claim({"UnreadableStatus", kGate, kPlan, "the stored status cannot be decoded (Stalled)"},
          step::UnreadableStatus),
    Record("Identity", kGate, kPlan, step::Identity),
    Claim({"UndecodableSpec", kGate, kPlan, "the stored spec cannot be decoded (Stalled)"},
          step::UndecodableSpec),
    Claim({"InvalidSpec", kGate, "operator/api/validation.cc", "the spec is invalid (Stalled)"},
          step::InvalidSpec),
    Record("SpecValid", kHeld, kPlan, ClearStalled),
    Record("Counters", kHeld, kPlan, PlanCounters),
    Find("KueueDecision", kHeld, "operator/controller/kueue_plan.cc", step::KueueDecision),
    Claim({"Finished", kHeld, kPlan, "the job has finished: clean its pods, run its TTL"},
          step::Finished),
    Claim({"Suspended", kHeld, kPlan, "spec.runPolicy.suspend: delete the pods"}, step::Suspended),
    Claim({"Queued", kHeld, kPlan, "Kueue holds the job: delete the pods, state Queued"},
          step::Queued),
    Record("Resumed", kActive, kPlan, step::Resumed),
    Claim({"DeadlineExceeded", kActive, "operator/controller/timers.cc",
           "activeDeadlineSeconds has passed: the job fails"},
          step::DeadlineExceeded),
    Record("Exclusions", kActive, "operator/controller/restart_plan.cc", PruneExclusions),
    Record("SpareRecord", kActive, "operator/controller/spare_plan.cc", PlanSpareRecord),
    Find("StaleDeletes", kActive, "operator/controller/restart_plan.cc", step::StaleDeletes),
    Find("Failure", kActive, "operator/controller/failure_policy.cc", step::Failure),
    Claim({"PeerLoss", kActive, "operator/controller/peer_loss_plan.cc",
           "a member node 0's launcher reported lost is corroborated: Recreate restart"},
          step::PeerLoss),
    Claim({"AwaitingCulprit", kActive, "operator/controller/failure_policy.cc",
           "only exit 75 (a peer was lost) so far: wait for the failing pod's status"},
          step::AwaitingCulprit),
    Find("StartupFailing", kActive, "operator/controller/startup_policy.cc", step::StartupFailing),
    Claim({"FailJob", kActive, "operator/controller/failure_policy.cc",
           "a failure the policy does not restart: the job fails"},
          step::FailJob),
    Claim({"AwaitingSpare", kActive, "operator/controller/spare_plan.cc",
           "a standby spare may cover the failure: ask node 0 first"},
          step::AwaitingSpare),
    Claim({"FailureRestart", kActive, "operator/controller/restart_plan.cc",
           "a failure or disruption the policy restarts: Recreate restart"},
          step::FailureRestart),
    Record("InPlaceRecord", kActive, "operator/controller/inplace_plan.cc", PlanInPlaceRecord),
    Record("TrainingProgress", kActive, "operator/controller/training_progress.cc",
           PlanTrainingProgress),
    Claim({"Succeeded", kActive, "operator/controller/success_policy.cc",
           "the success roles' pods succeeded: the job succeeds"},
          step::Succeeded),
    Claim({"RestartRequest", kActive, "operator/controller/inplace_plan.cc",
           "a new lockstep.dev/restart-request is met by a Recreate restart"},
          step::RestartRequest),
    Claim({"Resize", kActive, "operator/controller/elastic_policy.cc",
           "an elastic job changes size: Recreate restart"},
          step::Resize),
    Record("StartTime", kActive, kPlan, step::StartTime),
    Claim({"RestartWait", kActive, "operator/controller/restart_plan.cc",
           "the old attempt's pods are not gone or the backoff runs: create nothing yet"},
          step::RestartWait),
    Record("SpareDeletes", kActive, "operator/controller/spare_plan.cc", PlanSpareDeletes),
    Claim({"PodsUnbuildable", kActive, "operator/api/children.cc",
           "the missing pods cannot be built (Stalled)"},
          step::PodsUnbuildable),
    Claim({"Progress", kActive, kPlan, "always: create what is missing, report progress"},
          step::Progress),
};

}  // namespace

const std::vector<PlanStep>& PlanSteps() {
  static const std::vector<PlanStep> rows = [] {
    std::vector<PlanStep> out;
    for (const Step& s : kSteps) out.push_back(s.row);
    return out;
  }();
  return rows;
}

Plan ComputePlan(const CachedJob& cached, const Observed& observed, api::Time now, bool settled,
                 const PlanOptions& options) {
  Plan plan;
  plan.status = cached.job.status;
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
  Findings findings(cached);
  for (const Step& s : kSteps) {
    if (s.record != nullptr) s.record(p);
    if (s.find != nullptr) s.find(p, findings);
    if (s.claim == nullptr || !s.claim(p, findings)) continue;
    plan.decided_by = s.row.name;
    if (s.row.stage != PlanStage::kGate) {
      plan.endpoint_slices =
          PlanEndpointSlices(cached.job, observed.pods, observed.endpoint_slices);
      // Last, over the status the steps made: it charges the time the stored status held.
      if (observed.launchers && observed.launchers->answered) {
        if (std::optional<LateRecovery> late =
                LauncherRecovery(observed.launchers->status, cached.job.status, now)) {
          MergeLateRecovery(&plan.late_recovery, std::move(*late));
        }
      }
      plan.status.goodput = NextGoodput(cached.job.status, plan.status,
                                        cached.job.metadata.creation_timestamp, now,
                                        plan.late_recovery);
    }
    break;
  }
  return plan;
}

}  // namespace lockstep::controller
