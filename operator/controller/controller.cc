#include "operator/controller/controller.h"

#include "common/log.h"
#include "operator/api/enums.h"
#include "operator/controller/pod_wake.h"
#include "operator/kueue/workload.h"

namespace lockstep::controller {

TrainingJobController::TrainingJobController(kube::RestClient& client, ControllerOptions options,
                                             kube::KubeMetrics* kube_metrics,
                                             ControllerMetrics* metrics, const Clock& clock)
    : options_(std::move(options)),
      metrics_(metrics),
      clock_(clock),
      caches_(client, options_.namespaces, options_.pools.pods, clock),
      node_health_(client, options_.node_health, metrics, options_.pools.nodes, clock),
      expectations_(clock),
      events_(client, options_.events, clock),
      queue_(kControllerName, kube::DefaultControllerRateLimiter(clock), clock, kube_metrics),
      launchers_(options_.launcher_control
                     ? std::make_unique<LauncherMonitor>(
                           client,
                           // Refused answers (beyond the job's size, not the protocol) become
                           // one rate-limited Warning event per job (launcher_control.h).
                           std::make_unique<RefusalReportingControl>(
                               std::make_unique<RdzvLauncherControl>(), events_, clock),
                           clock)
                     : nullptr),
      kueue_(options_.kueue ? std::make_unique<KueueCaches>(client, options_.namespaces) : nullptr),
      templates_(client, options_.namespaces),
      reconciler_(client, caches_, expectations_, events_, metrics,
                  PlanOptions{options_.launcher_image, PlanOptions().node_exclusion,
                              options_.operator_peer},
                  clock) {
  CacheHandlers h;
  h.job_changed = [this](const std::string& key) { queue_.Add(key); };
  h.job_deleted = [this](const std::string& key) {
    expectations_.Forget(key);
    queue_.Add(key);
  };
  h.pod_added = [this](const std::string& key, const kube::Pod& pod) {
    expectations_.CreationObserved(key, pod.meta.name);
    if (pod.meta.deletion_timestamp) expectations_.DeletionObserved(key, pod.meta.uid);
    queue_.Add(key);
  };
  h.pod_updated = [this](const std::string& key, const kube::Pod& pod) {
    // A pod marked for deletion counts as deleted, like the Job controller's rule.
    if (pod.meta.deletion_timestamp) expectations_.DeletionObserved(key, pod.meta.uid);
    // Progress (bound, started, Running) waits out the batch period, so a gang's pods coming
    // up fold into a reconcile or two; possible bad news does not wait (pod_wake.h).
    if (PodChangeIsUrgent(pod)) {
      queue_.Add(key);
    } else {
      queue_.AddAfter(key, kPodBatchPeriod);
    }
  };
  h.pod_deleted = [this](const std::string& key, const kube::Pod& pod) {
    // Deleted by someone else (the taint-eviction controller, a user, the scheduler): why a
    // member of a running gang went, even when it is gone before a pass sees it.
    if (!expectations_.DeletedByUs(pod.meta.uid)) caches_.RecordGone(key, pod);
    expectations_.DeletionObserved(key, pod.meta.uid);
    queue_.Add(key);
  };
  h.child_changed = [this](const std::string& key) { queue_.Add(key); };
  caches_.SetHandlers(std::move(h));
  if (launchers_ != nullptr) {
    // A new answer from a job's launchers (a restart, a round that runs) is news for that job.
    launchers_->SetChangedHandler([this](const std::string& key) { queue_.Add(key); });
    // Polled on the monitor's own cadence too, so a lost peer the launchers report wakes the
    // job within about 2 s instead of the plan's 10 s poll (launcher_monitor.h "Cadence").
    launchers_->SetWatchInterval(kWatchInterval);
    reconciler_.SetLauncherMonitor(launchers_.get());
  }
  if (kueue_ != nullptr) {
    kueue_->SetHandlers([this](const std::string& key) { queue_.Add(key); },
                        [this] {
                          for (const auto& job : caches_.ListJobs()) {
                            if (!kueue::QueueName(job->job).empty()) queue_.Add(job->meta.Key());
                          }
                        });
    reconciler_.SetKueueCaches(kueue_.get());
  }
  // A template's add or change is news for the jobs that name it and have not started (a
  // started job runs on its snapshot); templates are few and rarely change.
  templates_.SetHandler([this](const api::TemplateRef& ref, const std::string& ns) {
    for (const auto& job : caches_.ListJobs()) {
      if (!job->awaits_template || !job->template_ref || !(*job->template_ref == ref)) continue;
      if (!ref.cluster_scoped() && job->meta.namespace_ != ns) continue;
      queue_.Add(job->meta.Key());
    }
  });
  reconciler_.SetTemplateCaches(&templates_);
  caches_.SetNodeHealth(&node_health_);
  // A lost node is news for every job with a pod on it; their reconciles see it in
  // Observed::lost_nodes.
  node_health_.SetLostHandler([this](const std::string& node, const NodeVerdict&) {
    for (const std::string& key : caches_.JobsOnNode(node)) queue_.Add(key);
  });
}

TrainingJobController::~TrainingJobController() { Stop(); }

std::string TrainingJobController::UnsyncedCaches() const {
  std::string jobs = caches_.UnsyncedCaches();
  const std::string nodes = node_health_.UnsyncedCaches();
  if (!jobs.empty() && !nodes.empty()) jobs += ", ";
  return jobs + nodes;
}

void TrainingJobController::StartCaches() {
  node_health_.Start();
  caches_.Start();
  templates_.Start();
  if (kueue_ != nullptr) kueue_->Start();
}

void TrainingJobController::StartWorkers() {
  std::lock_guard<std::mutex> lock(workers_mu_);
  if (stopped_ || !workers_.empty()) return;
  // Only the leader talks to the launchers.
  if (launchers_ != nullptr) launchers_->Start();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Worker(); });
}

void TrainingJobController::RequestStop() {
  node_health_.RequestStop();
  caches_.RequestStop();
  templates_.RequestStop();
  if (kueue_ != nullptr) kueue_->RequestStop();
}

void TrainingJobController::Stop() {
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(workers_mu_);
    if (stopped_) return;
    stopped_ = true;
    workers.swap(workers_);
  }
  RequestStop();  // the watches wind down while the workers finish their keys
  if (launchers_ != nullptr) launchers_->Stop();
  queue_.ShutDown();
  for (std::thread& t : workers) t.join();
  node_health_.Stop();
  caches_.Stop();
  templates_.Stop();
  if (kueue_ != nullptr) kueue_->Stop();
  events_.Flush(std::chrono::seconds(2));
}

void TrainingJobController::Worker() {
  // Acting on a partial cache would recreate children that exist.
  while (!caches_.WaitForSync(std::chrono::milliseconds(200)) ||
         !node_health_.WaitForSync(std::chrono::milliseconds(200))) {
    if (queue_.ShuttingDown()) return;
  }
  while (std::optional<std::string> key = queue_.Get()) {
    ProcessKey(*key);
    queue_.Done(*key);
  }
}

void TrainingJobController::ProcessKey(const std::string& key) {
  const auto start = clock_.Now();
  StatusOr<ReconcileResult> r = reconciler_.Reconcile(key);
  const double seconds = std::chrono::duration<double>(clock_.Now() - start).count();
  std::string result = "success";
  if (!r.ok() && kube::IsNamespaceTerminating(r.status())) {
    // The namespace controller is deleting the job with everything else in its namespace: no
    // retry can create anything there, and the job's deletion ends the matter.
    result = "error";
    log::Info("namespace being deleted; not retrying", {{"job", key}});
    queue_.Forget(key);
  } else if (!r.ok()) {
    result = "error";
    // Conflicts and AlreadyExists are the normal price of optimistic writes on a stale cache.
    const bool expected = kube::IsConflict(r.status()) || IsAlreadyExists(r.status());
    (expected ? log::Debug : log::Warning)(
        "reconcile failed", {{"job", key}, {"error", r.status().ToString()}});
    queue_.AddRateLimited(key);
  } else {
    queue_.Forget(key);
    if (r->requeue_after) {
      result = "requeue_after";
      queue_.AddAfter(key, *r->requeue_after);
    }
  }
  if (metrics_ != nullptr) metrics_->ObserveReconcile(result, seconds);
}

void TrainingJobController::RefreshJobGauge() {
  if (metrics_ == nullptr) return;
  ControllerMetrics::JobCounts counts;
  for (const auto& job : caches_.ListJobs()) {
    const std::string state =
        job->job.status.state ? std::string(api::ToString(*job->job.status.state)) : "Pending";
    ++counts[{job->meta.namespace_, std::string(api::ToString(job->job.spec.framework)), state}];
  }
  metrics_->SetJobCounts(counts);
}

}  // namespace lockstep::controller
