#pragma once
// The informer caches the job controller reads: TrainingJobs, and the Pods, Services,
// NetworkPolicies and EndpointSlices that carry the lockstep.dev/job-name label (the children it
// creates; the label selector keeps unrelated objects out of memory), each indexed by job key
// (pods also by node name, for the failure detector). One set of informers per watched namespace
// ("" = all namespaces). Readers get shared immutable objects: copy before changing anything.
// The job's rendezvous Secret is not cached: RBAC cannot limit list/watch to labelled Secrets,
// so an informer would need every Secret of the namespace; the executor creates it and reads it
// back by name instead (plan_executor.h), and the operator may only get and create Secrets.

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/gone_pods.h"
#include "operator/controller/node_health.h"
#include "operator/controller/plan_types.h"
#include "operator/kube/decode_pool.h"
#include "operator/kube/informer.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

inline constexpr char kJobIndex[] = "job";
inline constexpr char kNodeIndex[] = "node";  // pods by spec.nodeName (bound pods only)

// Callbacks with the job key an object belongs to.
struct CacheHandlers {
  std::function<void(const std::string& job_key)> job_changed;
  std::function<void(const std::string& job_key)> job_deleted;
  std::function<void(const std::string& job_key, const kube::Pod& pod)> pod_added;
  std::function<void(const std::string& job_key, const kube::Pod& pod)> pod_deleted;
  std::function<void(const std::string& job_key, const kube::Pod& pod)> pod_updated;
  // Service, NetworkPolicy or EndpointSlice added or deleted.
  std::function<void(const std::string& job_key)> child_changed;
};

class JobCaches {
 public:
  // `namespaces` empty: all namespaces. `pod_pool`: shared with the gang scheduler's pod cache
  // (kube/object_pools.h); null: pods decoded for these caches alone. `clock` times the node
  // verdicts, the gone pods' memory and the cache waits; it outlives the caches.
  JobCaches(kube::RestClient& client, const std::vector<std::string>& namespaces,
            std::shared_ptr<kube::DecodePool<kube::Pod>> pod_pool = nullptr,
            const Clock& clock = RealClock::Get());
  ~JobCaches();

  // Before Start().
  void SetHandlers(CacheHandlers handlers);
  // Before Start(); may stay unset (then no node is ever lost). Not owned; must outlive this.
  void SetNodeHealth(const NodeHealthMonitor* node_health) { node_health_ = node_health; }
  void Start();
  void RequestStop();  // without waiting; Stop() waits
  void Stop();
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  // The caches whose first list has not ended, as "<namespace>/<resource>, ..." ("" when all
  // have): what /readyz names while the operator is not ready.
  std::string UnsyncedCaches() const;

  std::shared_ptr<const CachedJob> GetJob(const std::string& key) const;
  std::vector<std::shared_ptr<const CachedJob>> ListJobs() const;
  // The children of `job` that it controls (ownerReference controller=true with its UID), and
  // the lost nodes among those its non-terminal pods are bound to (judged now, by wall clock).
  // Terminal pods are left out: a finished pod loses nothing with its node, and the API server
  // deletes it at once. Also the job's pods the informer saw deleted lately and no cached pod
  // replaces (gone_pods.h), with the lost nodes among theirs.
  Observed ObserveChildren(const CachedJob& job) const;
  // The node as the node monitor's caches hold it (peer_loss.h); nullopt without a monitor or
  // before its caches synced.
  std::optional<NodeSnapshot> NodeFacts(const std::string& node) const;
  // A pod of `job_key` that someone other than this controller deleted: its last state is kept
  // for ObserveChildren (gone_pods.h), unless the job is gone or going (the garbage collector's
  // deletes). Call from the pod_deleted handler, before it wakes the job.
  void RecordGone(const std::string& job_key, const kube::Pod& last);
  // The keys of the jobs with a pod bound to `node`, each once.
  std::vector<std::string> JobsOnNode(const std::string& node) const;

 private:
  struct Namespace {
    std::unique_ptr<kube::Informer<CachedJob>> jobs;
    std::unique_ptr<kube::Informer<kube::Pod>> pods;
    std::unique_ptr<kube::Informer<kube::MetaObject>> services;
    std::unique_ptr<kube::Informer<kube::MetaObject>> network_policies;
    std::unique_ptr<kube::Informer<kube::MetaObject>> endpoint_slices;
  };
  const Namespace* For(const std::string& ns) const;
  // Its five informers, in the order they are waited for and named.
  static std::array<const kube::InformerBase*, 5> Informers(const Namespace& n);
  void Wire(Namespace& n);

  const Clock& clock_;
  CacheHandlers handlers_;
  const NodeHealthMonitor* node_health_ = nullptr;
  GonePods gone_;
  std::map<std::string, Namespace> namespaces_;  // "" when watching all
};

// "namespace/<lockstep.dev/job-name label>" or "" when the label is absent.
std::string JobKeyOf(const kube::ObjectMeta& meta);

}  // namespace lockstep::controller
