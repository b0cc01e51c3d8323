#pragma once
// TrainingJobReconciler: one level-triggered pass over one TrainingJob.
//
//   observe  the job from the cache (a copy; the cache is shared), whether expectations are
//            settled (checked BEFORE listing pods, so a pod created meanwhile cannot sneak past),
//            and the children it controls;
//   plan     ComputePlan (plan.h), pure;
//   act      bounded writes (plan_executor.h): Service and Secret, then pods in slow-start
//            batches (8, 16, 32, ... at most kMaxCreatesPerPass) that stop at the first error;
//            expectations raised before every create and delete;
//   persist  ONE /status write (a merge patch carrying metadata.resourceVersion, so a stale view
//            gets Conflict instead of overwriting), then events and outcome metrics.
// Idempotent: pod names are deterministic, so a pass repeated after a crash at any point
// creates nothing twice (a second create of a name gets AlreadyExists).

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "operator/controller/controller_metrics.h"
#include "operator/controller/expectations.h"
#include "operator/controller/job_caches.h"
#include "operator/controller/kueue_caches.h"
#include "operator/controller/launcher_monitor.h"
#include "operator/controller/peer_loss_log.h"
#include "operator/controller/plan.h"
#include "operator/controller/plan_executor.h"
#include "operator/controller/template_caches.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

// What this controller last wrote to a job's status that its next passes must see first (see
// TrainingJobReconciler::status_writes_).
struct StatusWrite {
  Clock::Steady when{};
  bool finished = false;  // Succeeded or Failed
  int32_t attempt = 0;    // the attempt written (the job's attempt, or a restart's next one)
  // The resourceVersion the write replaced (its precondition): a cached job still at it has not
  // seen the write. Empty when the write changed nothing (the apiserver kept the version).
  std::string replaced_rv;
};

// True when the cached job shows `written`: a resourceVersion other than the one the write
// replaced, finished if it was, and the attempt written or a later one (attempts only grow; a
// finished status is terminal).
bool CacheShows(const StatusWrite& written, const api::TrainingJobStatus& cached,
                const std::string& cached_rv);

struct ReconcileResult {
  std::optional<std::chrono::seconds> requeue_after;
};

class TrainingJobReconciler {
 public:
  // `metrics` may be null.
  TrainingJobReconciler(kube::RestClient& client, const JobCaches& caches,
                        Expectations& expectations, kube::EventRecorder& events,
                        ControllerMetrics* metrics, PlanOptions options,
                        const Clock& clock = RealClock::Get());

  StatusOr<ReconcileResult> Reconcile(const std::string& key);

  // Before the first Reconcile; may stay unset (then the plan never hears from the launchers and
  // sends them nothing). Not owned; must outlive this.
  void SetLauncherMonitor(LauncherMonitor* launchers) { launchers_ = launchers; }
  // The gang scheduler in this process (create_placed.h); null: pods are always created unplaced.
  void SetGangPlacer(GangPlacer* placer) {
    placer_ = placer;
    executor_.SetGangPlacer(placer);
  }
  // Before the first Reconcile; unset: no job is managed through Kueue (the operator runs
  // without --kueue). Not owned; must outlive this.
  void SetKueueCaches(const KueueCaches* kueue) { kueue_ = kueue; }
  // The templates jobs name in spec.templateRef (template_resolve.h). Null: such jobs wait.
  void SetTemplateCaches(const TemplateCaches* templates) { templates_ = templates; }

 private:
  Status PersistStatus(const CachedJob& job, const Plan& plan);
  void Emit(const CachedJob& job, const EventSpec& event);
  // Events for a status write the apiserver refused as invalid (see reconciler.cc).
  void EmitStatusRejected(const CachedJob& job, const Plan& plan, const Status& refusal);
  void RecordMetrics(const CachedJob& job, const Plan& plan);
  // lockstep_job_progress_ratio and lockstep_job_samples_per_second: set from status.progress
  // while the job is active, removed once it finished or was deleted (key: namespace/name).
  void RecordProgressMetrics(const CachedJob& job, const Plan& plan);
  // lockstep_job_goodput_ratio (live, while the job exists) and the lost-time counters (what
  // this pass's write added).
  void RecordGoodputMetrics(const CachedJob& job, const Plan& plan);
  void ForgetProgressMetrics(const std::string& key);
  // The plan's launcher requests (Status poll, Restart), handed to the monitor after the status
  // write: a Restart is recorded (status.restartRequest) before it is sent.
  void AskLaunchers(const CachedJob& job, const Observed& observed, const Plan& plan);
  // Observed::peer_loss_nodes: the nodes of the pods the launchers reported lost.
  void ObservePeerLossNodes(Observed& observed) const;
  // Observed::spare_domain: the gang's topology domain, from the node caches (spare_plan.h).
  void ObserveSpareDomain(const CachedJob& job, Observed& observed) const;
  // Counts each lost report's verdict once in lockstep_peer_loss_reports_total, and logs it as
  // PeerLossLogLimit allows (peer_loss_log.h: a few lines per job and verdict a minute).
  void NotePeerLoss(const CachedJob& job, const Plan& plan);

  // The job's cache has not caught up with the last status this controller wrote (see
  // status_writes_). Forgets entries once the cache shows them, or after a minute.
  bool StatusCacheBehind(const CachedJob& job);
  void NoteStatusWrite(const CachedJob& job, const Plan& plan, const nlohmann::json& response);

  kube::RestClient& client_;
  const JobCaches& caches_;
  Expectations& expectations_;
  kube::EventRecorder& events_;
  // The plan's writes (act). Errors stop the pass after what was done is persisted.
  PlanExecutor executor_;
  ControllerMetrics* metrics_;
  const PlanOptions options_;
  const Clock& clock_;
  LauncherMonitor* launchers_ = nullptr;
  GangPlacer* placer_ = nullptr;
  const KueueCaches* kueue_ = nullptr;
  const TemplateCaches* templates_ = nullptr;
  std::mutex peer_loss_mu_;
  // job key -> "pod|report|verdict" already logged; guarded by peer_loss_mu_.
  std::map<std::string, std::set<std::string>> peer_loss_seen_;
  PeerLossLogLimit peer_loss_log_;  // guarded by peer_loss_mu_
  // uid -> what this controller last wrote that its passes must see before acting again:
  //  - Succeeded/Failed: the pass that finishes a job also deletes its pods (cleanPodPolicy);
  //    the pod watch can report them gone before the job watch reports the finished status,
  //    and a pass on that stale job would create the attempt's pods again;
  //  - a restart (attempt N+1): a pass on the stale job (attempt N) sees the new attempt's pods
  //    as stale and deletes them (issue 18: "attempt 3 never ran");
  //  - any other write: a pass on the job as it was before the write computes from a status
  //    that is gone, and its own status write, preconditioned on the old resourceVersion, can
  //    only be refused (409). Such passes were ~2 of a gang's ~4 status PATCHes in a burst (the
  //    pod watch woke the job before the job watch delivered its previous write).
  // Until the cache shows the write, passes wait for it (the job watch's event for the write
  // wakes the job; a requeue after a second in case it does not).
  std::mutex status_writes_mu_;
  std::map<std::string, StatusWrite> status_writes_;
};

// The merge patch that turns `old_status` into `new_status` (fields that disappeared become
// null), with the resourceVersion precondition; null when nothing changed.
nlohmann::json StatusPatch(const api::TrainingJobStatus& old_status,
                           const api::TrainingJobStatus& new_status,
                           const std::string& resource_version);
// The patch of a status the operator could not fully read (Plan::conditions_only): only
// status.conditions, the ones it could not read kept as stored; null when nothing changed.
nlohmann::json ConditionsPatch(const CachedJob& job, const api::TrainingJobStatus& new_status);

}  // namespace lockstep::controller
