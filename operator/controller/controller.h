#pragma once
// TrainingJobController: wires the caches' events to a rate-limited work queue and runs
// `workers` threads that reconcile one job key at a time (the queue never hands one key to two
// workers). Pod events also settle expectations: an added pod satisfies its creation, a deleted
// pod (or one marked for deletion) satisfies its deletion.
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
#include "operator/controller/event_recorder.h"
#include "operator/controller/expectations.h"
#include "operator/controller/job_caches.h"
#include "operator/controller/reconciler.h"
#include "operator/kube/metrics.h"
#include "operator/kube/workqueue.h"

namespace lockstep::controller {

struct ControllerOptions {
  std::vector<std::string> namespaces;  // empty: all
  int workers = 4;
  std::string launcher_image;
  EventRecorderOptions events;
};

class TrainingJobController {
 public:
  // `kube_metrics` and `metrics` may be null.
  TrainingJobController(kube::RestClient& client, ControllerOptions options,
                        kube::KubeMetrics* kube_metrics, ControllerMetrics* metrics,
                        const Clock& clock = RealClock::Get());
  ~TrainingJobController();

  void StartCaches();
  bool CachesSynced() const { return caches_.HasSynced(); }
  // Starts the workers; they begin once the caches have synced.
  void StartWorkers();
  void Stop();

  // Sets lockstep_jobs from the cache (call before each scrape).
  void RefreshJobGauge();
  const JobCaches& caches() const { return caches_; }

 private:
  void Worker();
  void ProcessKey(const std::string& key);

  const ControllerOptions options_;
  ControllerMetrics* metrics_;
  const Clock& clock_;
  JobCaches caches_;
  Expectations expectations_;
  EventRecorder events_;
  kube::WorkQueue queue_;
  TrainingJobReconciler reconciler_;
  std::mutex workers_mu_;  // StartWorkers runs on the elector's thread, Stop on main's
  std::vector<std::thread> workers_;  // guarded by workers_mu_
  bool stopped_ = false;              // guarded by workers_mu_
};

}  // namespace lockstep::controller
