#pragma once
// The informer caches the job controller reads: TrainingJobs, and the Pods, Services and Secrets
// that carry the lockstep.dev/job-name label (the only children it creates; the label selector
// keeps unrelated objects out of memory), each indexed by job key. One set of informers per
// watched namespace ("" = all namespaces). Readers get shared immutable objects: copy before
// changing anything.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "operator/controller/cached_job.h"
#include "operator/controller/plan.h"
#include "operator/kube/informer.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

inline constexpr char kJobIndex[] = "job";

// Callbacks with the job key an object belongs to.
struct CacheHandlers {
  std::function<void(const std::string& job_key)> job_changed;
  std::function<void(const std::string& job_key)> job_deleted;
  std::function<void(const std::string& job_key, const kube::Pod& pod)> pod_added;
  std::function<void(const std::string& job_key, const kube::Pod& pod)> pod_deleted;
  std::function<void(const std::string& job_key, const kube::Pod& pod)> pod_updated;
  std::function<void(const std::string& job_key)> child_changed;  // Service or Secret
};

class JobCaches {
 public:
  // `namespaces` empty: all namespaces.
  JobCaches(kube::RestClient& client, const std::vector<std::string>& namespaces);
  ~JobCaches();

  // Before Start().
  void SetHandlers(CacheHandlers handlers);
  void Start();
  void Stop();
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  std::shared_ptr<const CachedJob> GetJob(const std::string& key) const;
  std::vector<std::shared_ptr<const CachedJob>> ListJobs() const;
  // The children of `job` that it controls (ownerReference controller=true with its UID).
  Observed ObserveChildren(const CachedJob& job) const;

 private:
  struct Namespace {
    std::unique_ptr<kube::Informer<CachedJob>> jobs;
    std::unique_ptr<kube::Informer<kube::Pod>> pods;
    std::unique_ptr<kube::Informer<kube::MetaObject>> services;
    std::unique_ptr<kube::Informer<kube::MetaObject>> secrets;
  };
  const Namespace* For(const std::string& ns) const;
  void Wire(Namespace& n);

  CacheHandlers handlers_;
  std::map<std::string, Namespace> namespaces_;  // "" when watching all
};

// "namespace/<lockstep.dev/job-name label>" or "" when the label is absent.
std::string JobKeyOf(const kube::ObjectMeta& meta);

}  // namespace lockstep::controller
