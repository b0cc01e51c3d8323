#pragma once
// PlanExecutor: the "act" of a reconcile pass (reconciler.h): it carries out a Plan's writes and
// nothing else. Bounded: the Service, the rendezvous Secret (also in every pass that creates pods:
// no cache holds it, Plan::create_secret) and the NetworkPolicy (at once), then pods in
// slow-start batches (kFirstCreateBatch, then doubling, at most kMaxCreatesPerPass, parallel
// within a batch) that stop at the first error, then deletes with a uid precondition (at
// most kMaxDeletesPerPass, kDeleteBatch at once) that stop after the batch with the first error
// other than "already gone". Expectations are raised before every create and delete and lowered
// for each write that failed, so a pod that will never be observed does not hold the job back.
// A failed create is reported as a FailedCreate event. Then the writes to the job's Kueue
// Workload, then the Service's EndpointSlices (server-side apply). The TTL deletion of a finished
// job replaces all of it.
// Placed at create (create_placed.h): when the pass's path is kPlaced and a GangPlacer is set,
// the gang's placement is asked for first and every pod is created with spec.nodeName; if any
// create fails (or the placer refuses what was stored), every pod created is deleted (uid
// precondition, expectations raised) and the error returned, so the next pass decides again. A
// placer that says no leaves the pods to be created unplaced, as without one.
//
// Thread-compatible: one pass at a time per job (the work queue's guarantee); creates and
// deletes within a batch run on their own threads.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "operator/api/network_policy.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/create_placed.h"
#include "operator/controller/expectations.h"
#include "operator/controller/plan_types.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

// The first batch of a pass's pod creates. A gang of up to 8 pods is created in one round trip
// (a job's first pass is latency-bound: bench/peers); a failing webhook or quota still costs at
// most 8 refused creates per pass, and the work queue backs the job off.
inline constexpr size_t kFirstCreateBatch = 8;

// Deletes issued at once. A gang's pods are deleted together so that every launcher gets its
// SIGTERM at about the same time: deleted one after another, a slow DELETE of the first (2 s,
// under load) let rank 0's launcher stop and close the rendezvous server before the next pod's
// deletion was even sent, and that pod's launcher, never signalled, fenced its ranks with
// SIGKILL instead of stopping them gracefully (framework_graceful_stop_e2e_test, suspend).
inline constexpr size_t kDeleteBatch = 32;

class PlanExecutor {
 public:
  // `operator_peer`: who the jobs' NetworkPolicies let reach the rendezvous port.
  PlanExecutor(kube::RestClient& client, Expectations& expectations, kube::EventRecorder& events,
               api::OperatorPeer operator_peer = {})
      : client_(client),
        expectations_(expectations),
        events_(events),
        operator_peer_(std::move(operator_peer)) {}

  // The scheduler in this process, for gangs created placed; null (the default): never.
  void SetGangPlacer(GangPlacer* placer) { placer_ = placer; }

  // The plan's writes; the first error stops them and is returned (what was done stays done).
  // `path`: whether the pods may be created placed (ChooseCreatePath).
  Status Act(const CachedJob& job, const Plan& plan, CreatePath path = CreatePath::kUnplaced);

 private:
  Status CreateSharedChildren(const CachedJob& job, const Plan& plan);
  Status CreatePods(const CachedJob& job, const Plan& plan);
  // Placed at create: nullopt when the placer said no (create unplaced), else the result.
  std::optional<Status> CreatePlacedPods(const CachedJob& job, const Plan& plan);
  // Creates `pods` in slow-start batches, stopping after a batch with an error; the answers of
  // the creates that succeeded go to `created`. Returns the first error.
  Status CreateInBatches(const CachedJob& job, const std::vector<nlohmann::json>& pods,
                         std::vector<nlohmann::json>* created);
  // Deletes the pods of a gang created placed that is undone (uid preconditions).
  void DeleteCreated(const CachedJob& job, const std::vector<nlohmann::json>& created);
  Status DeletePods(const CachedJob& job, const Plan& plan);
  // One pod of the job, by name with its uid as precondition, expectations raised first; Ok when
  // deleted or already gone (404, or 409: a newer pod holds the name), else the error.
  Status DeletePod(const CachedJob& job, const std::string& name, const std::string& uid,
                   std::optional<int64_t> grace_period_seconds);
  Status DeleteJob(const CachedJob& job);
  // The Service's EndpointSlices the plan carries, each applied whole; the first error stops them.
  Status ApplyEndpointSlices(const CachedJob& job, const Plan& plan);
  // The Kueue Workload writes, in order; the first error stops them. An AlreadyExists create
  // and a NotFound delete are done already.
  Status WriteWorkloads(const CachedJob& job, const Plan& plan);
  Status WriteWorkload(const CachedJob& job, const kueue::WorkloadWrite& write);
  // After an AlreadyExists create of a shared child: OK when the job controls `name`; else an
  // event `reason` and FailedPrecondition, so no pod is created. A `<job>-rdzv` Secret not the
  // job's holds someone else's token; a `<job>-launcher` NetworkPolicy not the job's holds
  // someone else's rules.
  Status CheckOwner(const CachedJob& job, const kube::ResourceRef& resource,
                    const std::string& name, std::string_view what, std::string_view reason,
                    std::string_view consequence);

  kube::RestClient& client_;
  Expectations& expectations_;
  kube::EventRecorder& events_;
  const api::OperatorPeer operator_peer_;
  GangPlacer* placer_ = nullptr;
};

// The job as an event's involved object.
kube::InvolvedObject InvolvedJob(const CachedJob& job);

}  // namespace lockstep::controller
