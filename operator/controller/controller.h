#pragma once
// TrainingJobController: wires the caches' events to a rate-limited work queue and runs
// `workers` threads that reconcile one job key at a time (the queue never hands one key to two
// workers). Pod events also settle expectations: an added pod satisfies its creation, a deleted
// pod (or one marked for deletion) satisfies its deletion.
//
// The NodeHealthMonitor (node_health.h) judges the nodes the pods run on; a node turning lost
// enqueues every job with a pod bound to it, and ObserveChildren reports it in
// Observed::lost_nodes.
//
// Lifecycle: construct, Start() (caches start; workers wait for the caches to sync),
// Stop() (queue shut down, workers joined). Workers may start later than the caches (leader
// election: a standby keeps warm caches and only starts workers once it leads).

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "operator/controller/controller_metrics.h"
#include "operator/controller/expectations.h"
#include "operator/controller/job_caches.h"
#include "operator/controller/kueue_caches.h"
#include "operator/controller/launcher_monitor.h"
#include "operator/controller/node_health.h"
#include "operator/controller/reconciler.h"
#include "operator/controller/template_caches.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/metrics.h"
#include "operator/kube/object_pools.h"
#include "operator/kube/workqueue.h"

namespace lockstep::controller {

struct ControllerOptions {
  std::vector<std::string> namespaces;  // empty: all
  int workers = 4;
  std::string launcher_image;
  api::OperatorPeer operator_peer = {};  // for the jobs' NetworkPolicies
  kube::EventRecorderOptions events;
  NodeHealthOptions node_health;
  // Talk to the launchers' rendezvous servers (Status polls, in-place restarts on request;
  // launcher_monitor.h). Off: in-place restarts show in status only through failed pods.
  bool launcher_control = true;
  // Manage the jobs labelled kueue.x-k8s.io/queue-name through Kueue Workloads (docs/queues.md).
  bool kueue = false;
  // Decoded pods and nodes shared with the gang scheduler's caches; null members: not shared.
  kube::ObjectPools pools;
};

class TrainingJobController {
 public:
  // `kube_metrics` and `metrics` may be null.
  TrainingJobController(kube::RestClient& client, ControllerOptions options,
                        kube::KubeMetrics* kube_metrics, ControllerMetrics* metrics,
                        const Clock& clock = RealClock::Get());
  ~TrainingJobController();

  void StartCaches();
  bool CachesSynced() const { return caches_.HasSynced() && node_health_.HasSynced(); }
  // The caches not synced yet, by name ("" when CachesSynced()).
  std::string UnsyncedCaches() const;
  // Starts the workers; they begin once the caches have synced.
  void StartWorkers();
  // Before StartWorkers: the gang scheduler in this process creates whole gangs placed
  // (create_placed.h). Null or never called: every pod is created unplaced.
  void SetGangPlacer(GangPlacer* placer) { reconciler_.SetGangPlacer(placer); }
  // Asks every watch to end without waiting (Stop() waits); lets a caller wind several
  // components down together.
  void RequestStop();
  void Stop();

  // Sets lockstep_jobs from the cache (call before each scrape).
  void RefreshJobGauge();
  const JobCaches& caches() const { return caches_; }
  const NodeHealthMonitor& node_health() const { return node_health_; }

 private:
  void Worker();
  void ProcessKey(const std::string& key);

  const ControllerOptions options_;
  ControllerMetrics* metrics_;
  const Clock& clock_;
  JobCaches caches_;
  NodeHealthMonitor node_health_;
  Expectations expectations_;
  kube::EventRecorder events_;
  kube::WorkQueue queue_;
  std::unique_ptr<LauncherMonitor> launchers_;  // null when options_.launcher_control is off
  std::unique_ptr<KueueCaches> kueue_;          // null unless options_.kueue
  TemplateCaches templates_;  // spec.templateRef (template_resolve.h)
  TrainingJobReconciler reconciler_;
  std::mutex workers_mu_;  // StartWorkers runs on the elector's thread, Stop on main's
  std::vector<std::thread> workers_;  // guarded by workers_mu_
  bool stopped_ = false;              // guarded by workers_mu_
};

}  // namespace lockstep::controller
