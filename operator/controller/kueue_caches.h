#pragma once
// The informer caches of Kueue's objects the job controller reads when it runs with --kueue
// (docs/queues.md): the Workloads it created (label lockstep.dev/job-name, indexed by job key),
// and the cluster's ResourceFlavors, WorkloadPriorityClasses and PriorityClasses. A Workload's
// change enqueues its job; a flavor's change enqueues every job Kueue manages (flavors are few
// and rarely change).
//
// Kueue's CRDs may be missing (Kueue not installed yet): the informers keep retrying, HasSynced
// stays false and the jobs that ask for a queue wait with a condition saying so (gate.h); the
// other jobs are not held back (the controller does not wait for these caches at start).
//
// Readers get copies or shared immutable objects. Thread-safe after Start().

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/cached_job.h"
#include "operator/kube/informer.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"
#include "operator/kueue/gate.h"

namespace lockstep::controller {

struct CachedWorkload {
  kube::ObjectMeta meta;
  kueue::WorkloadView view;
};
struct CachedFlavor {
  kube::ObjectMeta meta;
  kueue::Flavor flavor;
};
struct CachedPriority {
  kube::ObjectMeta meta;
  int32_t value = 0;
};

class KueueCaches {
 public:
  // `namespaces` as JobCaches' (empty: all).
  KueueCaches(kube::RestClient& client, const std::vector<std::string>& namespaces);
  ~KueueCaches();

  // Before Start(): `job_changed` with a job key; `all_jobs_changed` when a flavor or a priority
  // class changed.
  void SetHandlers(std::function<void(const std::string&)> job_changed,
                   std::function<void()> all_jobs_changed);
  void Start();
  void RequestStop();
  void Stop();
  bool HasSynced() const;

  // What the caches hold for `job` (gate.h's KueueObservation).
  kueue::KueueObservation Observe(const CachedJob& job) const;

 private:
  std::vector<std::unique_ptr<kube::Informer<CachedWorkload>>> workloads_;  // one per namespace
  std::unique_ptr<kube::Informer<CachedFlavor>> flavors_;
  std::unique_ptr<kube::Informer<CachedPriority>> workload_priorities_;
  std::unique_ptr<kube::Informer<CachedPriority>> priorities_;
};

}  // namespace lockstep::controller
