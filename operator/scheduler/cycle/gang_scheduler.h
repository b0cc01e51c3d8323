#pragma once
// GangScheduler: the Kubernetes side of Lockstep's gang scheduler. It keeps informers on Nodes,
// every non-terminal Pod (bound ones count against capacity whoever scheduled them), TrainingJobs,
// PriorityClasses, and PersistentVolumeClaims, PersistentVolumes and StorageClasses (a gang's
// claims, volumes.h), and runs the scheduling cycle (docs/scheduler-cycle.md):
//   1 collect pending complete gangs   2 snapshot (bound + assumed pods)   3 PlanCycle
//   4 assume placements                5 bind every pod of each placed gang concurrently, after
//                                        its volume writes (pre-bound PVs, selected nodes)
//   6 undo a gang whose bind failed (delete its possibly-bound pods) and let it requeue, and a
//     gang found split between bound and pending members that no bind of ours is completing
//   7 preemption: when the head of the queue does not fit, evict whole running gangs of lower
//     priority (ChooseVictims, preemption.h) and hold the capacity they free for it (queue.h)
// then explains every waiting gang in its Scheduled condition, and answers elastic jobs' capacity
// question in status.capacity (elastic_capacity.h). Cycles run on one thread,
// triggered by informer events (at most once per `debounce`) and by a periodic `tick`; binds
// run on a pool and overlap the next cycles (their pods stay assumed).
//
// Placed at create (PlaceForCreate/FinishCreate, create_placement.h): the controller in the same
// process may ask for the placement of a gang it is about to create; the answer is decided under
// the same lock as a cycle, on the snapshot a cycle would use, and assumed before it is returned,
// so no cycle and no other PlaceForCreate hands the same capacity out (docs/scheduler-cycle.md,
// "Created placed").
//
// Lifecycle: construct, StartCaches() (optional, early), Start(), wait for HasSynced(), Stop()
// (also in the destructor).
// Thread-safe. The RestClient and registry must outlive the scheduler.

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/informer.h"
#include "operator/kube/object_pools.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/assumed_pods.h"
#include "operator/scheduler/cycle/binder.h"
#include "operator/scheduler/cycle/cluster_objects.h"
#include "operator/scheduler/cycle/condition_writer.h"
#include "operator/scheduler/cycle/gangs.h"
#include "operator/scheduler/cycle/placement_text.h"
#include "operator/scheduler/cycle/scheduler_metrics.h"
#include "operator/scheduler/cycle/thread_pool.h"
#include "operator/scheduler/cycle/volume_objects.h"
#include "operator/scheduler/queue.h"

namespace lockstep::scheduler {

struct SchedulerOptions {
  std::string scheduler_name = "lockstep";
  // Only gangs (and TrainingJobs) in this namespace; empty = all. Nodes and bound pods are
  // always cluster-wide. Tests use it to stay out of each other's way.
  std::string namespace_filter;
  std::chrono::milliseconds debounce{50};
  std::chrono::milliseconds tick{1000};
  // A gang at the head that has waited this long gets capacity reserved (queue.h).
  std::chrono::seconds reserve_after{60};
  int bind_workers = 32;  // concurrent pods/binding requests
  std::chrono::seconds assume_ttl{30};
  // How often at most one elastic job's status.capacity is recomputed (each costs a few
  // placements): while its gang waits, and while it runs below spec.replicas (grow-back).
  std::chrono::milliseconds capacity_period{5000};
  // Field manager of the Scheduled condition's server-side apply.
  std::string field_manager = "lockstep-scheduler";
  // Nodes the operator's failure detector found lost (e.g. a Lease not renewed) while their
  // Node still reads Ready for tens of seconds: never placed on. Unset: Ready only.
  std::function<bool(const std::string& node)> node_lost;
  // Gang-aware priority preemption (docs/scheduler.md, "Preemption"). `preemption_hold` bounds
  // how long freed capacity stays held for a preemptor that is not placed (e.g. deleted).
  bool preemption = true;
  std::chrono::seconds preemption_hold{120};
  // Decoded pods and nodes shared with the controller's caches in the operator process
  // (kube/object_pools.h); null members: decoded for the scheduler alone.
  kube::ObjectPools pools;
};

class GangScheduler {
 public:
  GangScheduler(kube::RestClient& client, prometheus::Registry& registry,
                SchedulerOptions options = {}, const Clock& clock = RealClock::Get());
  ~GangScheduler();
  GangScheduler(const GangScheduler&) = delete;
  GangScheduler& operator=(const GangScheduler&) = delete;

  // Starts the informers alone: no cycle runs, nothing is bound. A standby operator calls it
  // before it leads so that its caches are full when it does: a PlaceForCreate on caches still
  // listing falls back to the binding path, and each cost the new leader up to kJobCacheWait
  // before it did (issue 43, "Ready means ready"). Idempotent; Start() calls it.
  void StartCaches();
  // StartCaches(), then the cycle loop and the bind pool.
  void Start();
  // Stops the cycle loop and informers, then waits for binds in flight (and their undo).
  void Stop();
  // Cancels every API request of the scheduler, its condition writes included, for good
  // (kube::RestClient::Cancel): a Stop() under a dead apiserver then ends at once.
  void CancelRequests();
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  // The resources whose caches have not synced yet ("pods, nodes"), "" when all have.
  std::string UnsyncedCaches() const;

  // A gang the controller may create with these nodes (pod name -> node); the gang's key names
  // it in FinishCreate. An error means "create it unplaced, the binding path decides": caches
  // not synced, not one complete gang of the job's current attempt as this scheduler's caches
  // hold it, a gang of higher or equal priority waiting, no fit (this path never preempts), or
  // this job's pods were changed at admission before. `pods`: the Pod objects to be created.
  struct CreateGrant {
    std::string gang_key;                       // "namespace/job/attempt"
    std::map<std::string, std::string> node_of;  // pod name -> node
  };
  StatusOr<CreateGrant> PlaceForCreate(const std::vector<nlohmann::json>& pods);
  // The creates of a granted gang are over: `created` holds the apiserver's answers for the pods
  // that were created, `whole` whether every pod was. Records the placement (Scheduled
  // condition, metrics) when whole and every stored pod still fits where it was placed
  // (PlacedRequestHolds); otherwise returns an error and the caller deletes the pods it created.
  // Capacity of created pods stays assumed until the pod list shows them; of the others, freed.
  Status FinishCreate(const std::string& gang_key, const std::vector<nlohmann::json>& created,
                      bool whole);

  // Counters for tests and logs.
  int64_t cycles() const { return cycles_.load(); }
  int64_t gangs_bound() const { return gangs_bound_.load(); }
  int64_t gangs_preempted() const { return gangs_preempted_.load(); }
  int64_t gangs_created_placed() const { return gangs_created_placed_.load(); }
  // Batches of placed-at-create decisions made (each built at most one snapshot).
  int64_t create_batches() const { return create_batches_.load(); }
  // TrainingJobs in this scheduler's cache (a gang is placed only once its job is there).
  size_t cached_jobs() const { return jobs_.store().Size(); }

 private:
  using Steady = Clock::Steady;

  void AddHandlers();
  void Trigger();
  void Loop();
  void RunCycle();

  // Phase helpers.
  CollectInputs Inputs();
  GangCollection Collect(const std::vector<PodPtr>& pods);
  Snapshot BuildSnapshot(const std::vector<PodPtr>& pods, Steady now);
  void AssumeAndBind(const CollectedGang& gang, const Placement& placement, Steady queued_since,
                     std::string placed_message, const VolumeCatalog& volumes);
  // The claims, PVs and classes as cached now (volume_objects.h).
  VolumeCatalog Volumes() const;
  void Explain(const CollectedGang& gang, const GangDecision& decision,
               const std::string& note = "");
  // Phase 7. Returns what the preemptor's explanation adds (victims named), or "".
  std::string Preempt(const CollectedGang& head, const CyclePlan& plan,
                      const std::vector<PodPtr>& pods, Steady now);
  void Evict(const RunningGangs& running, size_t victim, const CollectedGang& preemptor);
  // Drops the hold when its holder is placed, gone, or held too long.
  void ExpireHold(const GangCollection& gangs, Steady now);
  void UpdateGauges(const CyclePlan& plan, const std::vector<PodPtr>& pods, size_t waiting);
  void OnGangBound(const GangBind& bind, const BindOutcome& outcome);
  void UndoLeftover(LeftoverGang leftover);
  // Deletes `pod` unless a newer pod took its name (UID precondition); true when it is gone.
  bool DeleteUnlessReplaced(const kube::Pod& pod);
  Steady QueuedSince(const std::string& gang_key, Steady now);
  void ForgetStaleQueueEntries(const GangCollection& gangs);
  // Placed at create, decided in batches: a pass's ask joins asks_, then waits for the decision
  // lock; whoever gets the lock first decides every ask queued by then (DecideCreateBatch) on one
  // snapshot, assuming each grant on it before the next ask is decided, so asks decided together
  // never share capacity and the snapshot is built once per batch instead of once per gang. One
  // gang at a time, a burst of 500 gangs spent a quarter of the operator's CPU deciding, most of
  // it building snapshots, and a pass waited 0.96 s for its answer (bench/RESULTS.md).
  struct CreateAsk {
    std::vector<PodPtr> pods;
    std::optional<StatusOr<CreateGrant>> answer;  // written and read under decide_mu_
  };
  struct CreateBatch;  // what every decision of one batch reads (gang_scheduler_create.cc)
  StatusOr<CreateGrant> DecideForCreate(std::vector<PodPtr> pods);
  void DecideCreateBatch(const std::vector<std::shared_ptr<CreateAsk>>& asks);
  StatusOr<CreateGrant> DecideOneCreate(const std::vector<PodPtr>& pods, Steady now,
                                        std::unique_ptr<CreateBatch>& batch);
  std::unique_ptr<CreateBatch> NewCreateBatch(Steady now);
  void WaitForJobCache(const kube::Pod& pod);
  void EvaluateCapacity(const Snapshot& snapshot, const std::vector<PodPtr>& pods,
                        const std::set<std::string>& waiting_jobs, Steady now);

  kube::RestClient& client_;
  const SchedulerOptions options_;
  const Clock& clock_;
  SchedulerMetrics metrics_;
  // A second client on the same transport: server-side apply carries the field manager of the
  // client, and the scheduler's must differ from the controller's.
  std::unique_ptr<kube::RestClient> status_client_;
  // The scheduler's Events (component lockstep-scheduler), paced like the controller's.
  kube::EventRecorder events_;
  ConditionWriter conditions_;

  kube::Informer<kube::Node> nodes_;
  kube::Informer<kube::Pod> pods_;
  kube::Informer<JobInfo> jobs_;
  kube::Informer<PriorityClassInfo> priority_classes_;
  kube::Informer<ClaimObject> claims_;
  kube::Informer<VolumeObject> volumes_;
  kube::Informer<StorageClassObject> storage_classes_;

  AssumedPods assumed_;
  // One decision at a time: a cycle (phases 1-7) or a PlaceForCreate. Taken before mu_.
  std::mutex decide_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Gangs granted by PlaceForCreate whose creates are not over; guarded by mu_ (their keys are
  // in in_flight_ meanwhile).
  struct CreatePlaced {
    CollectedGang gang;
    std::map<std::string, std::string> node_of;  // pod key -> node
    std::map<std::string, PodRequest> requests;  // pod key -> what was placed
    Steady granted{};
    std::string placed_message;
    int64_t cycle = 0;
  };
  std::map<std::string, CreatePlaced> creating_;
  // Asks not yet taken into a batch; guarded by asks_mu_ (taken alone, or under decide_mu_).
  std::mutex asks_mu_;
  std::vector<std::shared_ptr<CreateAsk>> asks_;
  std::atomic<int64_t> create_batches_{0};
  // Attempts (BindOnlyKey) created placed once and undone (a create failed, or admission changed
  // a pod): created unplaced and bound from then on. Dropped with the job; guarded by mu_.
  std::set<std::string> bind_only_;
  static std::string BindOnlyKey(const std::string& job_uid, const std::string& gang_key);
  bool dirty_ = false;                                // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  bool caches_started_ = false;                       // guarded by mu_
  std::set<std::string> in_flight_;                   // gang keys being bound; guarded by mu_
  std::map<std::string, Steady> first_seen_;          // gang key -> queue entry; cycle thread
  Steady last_gauges_{};                              // cycle thread
  std::map<std::string, Steady> capacity_checked_;    // job uid -> last evaluation; cycle thread
  // Capacity freed by a preemption, held for the preemptor (gang key) until `until`; cycle thread.
  struct Hold {
    std::string gang_key;
    HeldCapacity capacity;
    Steady until;
  };
  std::optional<Hold> hold_;
  // PriorityClasses as of this cycle's start (Inputs()); cycle thread.
  std::map<std::string, PriorityClassInfo> classes_;
  std::optional<PriorityClassInfo> default_class_;
  std::set<std::string> in_flight_copy_;

  std::atomic<int64_t> cycles_{0};
  std::atomic<int64_t> gangs_bound_{0};
  std::atomic<int64_t> gangs_preempted_{0};
  std::atomic<int64_t> gangs_created_placed_{0};
  std::unique_ptr<ThreadPool> pool_;  // binds and status writes
  std::unique_ptr<Binder> binder_;
  std::thread loop_;
};

}  // namespace lockstep::scheduler
