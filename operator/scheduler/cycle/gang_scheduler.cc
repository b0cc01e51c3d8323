#include "operator/scheduler/cycle/gang_scheduler.h"

#include <algorithm>
#include <unordered_map>

#include "common/log.h"
#include "operator/scheduler/cycle/convert.h"
#include "operator/scheduler/cycle/elastic_capacity.h"
#include "operator/scheduler/cycle/placement_text.h"
#include "operator/scheduler/fragmentation.h"

namespace lockstep::scheduler {
namespace {

// Terminal pods hold nothing; the server filters them out (and sends a delete when a pod ends).
constexpr char kNonTerminalPods[] = "status.phase!=Succeeded,status.phase!=Failed";

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string Millis(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000.0);
}

kube::ReflectorOptions WithFieldSelector(const char* selector) {
  kube::ReflectorOptions options;
  options.field_selector = selector;
  return options;
}

kube::RestOptions StatusRestOptions(const SchedulerOptions& options) {
  kube::RestOptions rest;
  rest.field_manager = options.field_manager;
  // Status writes share the bind pool: a client-side limit would stall binds behind them.
  // The apiserver's priority and fairness still applies.
  rest.qps = 0;
  return rest;
}

kube::EventRecorderOptions SchedulerEvents() {
  kube::EventRecorderOptions options;
  options.component = "lockstep-scheduler";
  return options;
}

}  // namespace

GangScheduler::GangScheduler(kube::RestClient& client, prometheus::Registry& registry,
                             SchedulerOptions options, const Clock& clock)
    : client_(client),
      options_(std::move(options)),
      clock_(clock),
      metrics_(registry),
      // Aliasing constructor: shares the client's transport without owning it.
      status_client_(std::make_unique<kube::RestClient>(
          std::shared_ptr<kube::Transport>(std::shared_ptr<kube::Transport>(),
                                           &client.transport()),
          StatusRestOptions(options_))),
      events_(client_, SchedulerEvents(), clock_),
      conditions_(*status_client_, events_, clock_),
      nodes_(client, kube::resources::Nodes(), "", kube::DecodeNode),
      pods_(client, kube::resources::Pods(), "", kube::DecodePod,
            WithFieldSelector(kNonTerminalPods)),
      jobs_(client, kube::resources::TrainingJobs(), options_.namespace_filter, DecodeJobInfo),
      priority_classes_(client, PriorityClasses(), "", DecodePriorityClass),
      claims_(client, PersistentVolumeClaims(), options_.namespace_filter, DecodeClaim),
      volumes_(client, PersistentVolumes(), "", DecodeVolume),
      storage_classes_(client, StorageClasses(), "", DecodeStorageClass),
      assumed_(options_.assume_ttl) {
  nodes_.UseDecodePool(options_.pools.nodes);
  pods_.UseDecodePool(options_.pools.pods);
  AddHandlers();
}

GangScheduler::~GangScheduler() { Stop(); }

void GangScheduler::AddHandlers() {
  // Handlers run on reflector threads: they only mark the cluster dirty.
  auto trigger = [this](auto&&...) { Trigger(); };
  nodes_.AddEventHandler({trigger, trigger, trigger});
  // A pod created placed stays assumed until a cycle's pod list shows it (assumed_pods.h), or
  // until its deletion arrives: then it holds nothing, listed or not.
  pods_.AddEventHandler({trigger, trigger, [this](const PodPtr& pod, bool) {
                           assumed_.Deleted(pod->meta.Key(), pod->meta.uid);
                           Trigger();
                         }});
  jobs_.AddEventHandler({trigger, trigger, [this](const JobPtr& job, bool) {
                           conditions_.Forget(job->meta.uid);
                           {
                             std::lock_guard<std::mutex> lock(mu_);
                             const std::string prefix = job->meta.uid + "|";
                             std::erase_if(bind_only_, [&](const std::string& key) {
                               return key.rfind(prefix, 0) == 0;
                             });
                           }
                           Trigger();
                         }});
  priority_classes_.AddEventHandler({trigger, trigger, trigger});
  // A claim created (a generic ephemeral volume's), bound or annotated, a PV freed: a gang
  // waiting on its claims may fit now.
  claims_.AddEventHandler({trigger, trigger, trigger});
  volumes_.AddEventHandler({trigger, trigger, trigger});
  storage_classes_.AddEventHandler({trigger, trigger, trigger});
}

void GangScheduler::StartCaches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (caches_started_) return;
    caches_started_ = true;
  }
  nodes_.Start();
  pods_.Start();
  jobs_.Start();
  priority_classes_.Start();
  claims_.Start();
  volumes_.Start();
  storage_classes_.Start();
}

void GangScheduler::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (loop_.joinable()) return;
    stopping_ = false;
  }
  pool_ = std::make_unique<ThreadPool>(options_.bind_workers);
  binder_ = std::make_unique<Binder>(client_, *pool_, assumed_, clock_);
  StartCaches();
  loop_ = std::thread([this] { Loop(); });
}

void GangScheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // The watches wind down while the loop and the binds in flight finish.
  for (kube::InformerBase* informer :
       std::initializer_list<kube::InformerBase*>{&storage_classes_, &volumes_, &claims_,
                                                  &priority_classes_, &jobs_, &pods_, &nodes_}) {
    informer->RequestStop();
  }
  if (loop_.joinable()) loop_.join();
  // Binds in flight finish (or undo) before the informers they do not use go away.
  binder_.reset();
  pool_.reset();
  kube::StopAll(
      {&storage_classes_, &volumes_, &claims_, &priority_classes_, &jobs_, &pods_, &nodes_});
  // What the last cycles explained reaches the API before the process goes.
  events_.Flush(std::chrono::seconds(2));
}

void GangScheduler::CancelRequests() {
  client_.Cancel();
  status_client_->Cancel();
}

bool GangScheduler::HasSynced() const {
  return nodes_.HasSynced() && pods_.HasSynced() && jobs_.HasSynced() &&
         priority_classes_.HasSynced() && claims_.HasSynced() && volumes_.HasSynced() &&
         storage_classes_.HasSynced();
}

bool GangScheduler::WaitForSync(std::chrono::milliseconds timeout) const {
  return kube::WaitForSyncAll({&nodes_, &pods_, &jobs_, &priority_classes_, &claims_, &volumes_,
                               &storage_classes_},
                              timeout, clock_);
}

std::string GangScheduler::UnsyncedCaches() const {
  return kube::Unsynced(
      {&nodes_, &pods_, &jobs_, &priority_classes_, &claims_, &volumes_, &storage_classes_});
}

void GangScheduler::Trigger() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
  }
  cv_.notify_all();
}

void GangScheduler::Loop() {
  Steady last_cycle{};
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, options_.tick, [this] { return stopping_ || dirty_; });
    // Debounce: a burst of events (a gang's pods arriving) becomes one cycle.
    const Steady earliest = last_cycle + options_.debounce;
    if (clock_.Now() < earliest) {
      cv_.wait_for(lock, earliest - clock_.Now(), [this] { return stopping_; });
    }
    if (stopping_) break;
    dirty_ = false;
    lock.unlock();
    last_cycle = clock_.Now();
    if (HasSynced()) RunCycle();
    lock.lock();
  }
}

void GangScheduler::RunCycle() {
  std::lock_guard<std::mutex> decide(decide_mu_);
  const Steady start = clock_.Now();
  // Phase 1: pending gangs whose every pod exists.
  const std::vector<PodPtr> pods = pods_.store().List();
  GangCollection gangs = Collect(pods);
  for (LeftoverGang& leftover : gangs.leftovers) UndoLeftover(std::move(leftover));
  const Steady collected = clock_.Now();
  // Nothing to place (e.g. gangs still arriving pod by pod): skip the snapshot, which re-sums
  // every bound pod, except once per tick to keep the gauges fresh.
  if (gangs.complete.empty() && start - last_gauges_ < options_.tick) {
    ForgetStaleQueueEntries(gangs);
    ++cycles_;
    return;
  }

  // Gangs with claims: each claim as the cluster has it now (volumes.h). The catalog is built only
  // when some gang has one.
  VolumeCatalog volumes;
  const bool any_claims = std::any_of(
      gangs.complete.begin(), gangs.complete.end(), [](const CollectedGang& gang) {
        return std::any_of(gang.pods.begin(), gang.pods.end(), [](const std::vector<PodPtr>& role) {
          return std::any_of(role.begin(), role.end(),
                             [](const PodPtr& pod) { return HasVolumeClaims(*pod); });
        });
      });
  if (any_claims) {
    volumes = Volumes();
    for (CollectedGang& gang : gangs.complete) ResolveGangVolumes(gang, volumes);
  }

  // Phase 2: the cluster as bound and assumed pods leave it.
  const Snapshot snapshot = BuildSnapshot(pods, collected);
  const Steady snapped = clock_.Now();

  // Phase 3: the decisions (order, backfill, reservation) as a pure function.
  std::vector<PendingGang> pending;
  std::unordered_map<const GangRequest*, const CollectedGang*> by_request;
  for (const CollectedGang& gang : gangs.complete) {
    pending.push_back({&gang.request, QueuedSince(gang.key, start)});
    by_request.emplace(&gang.request, &gang);
  }
  ExpireHold(gangs, start);
  CycleOptions cycle_options;
  cycle_options.reserve_after = options_.reserve_after;
  if (hold_) cycle_options.held = hold_->capacity;
  const CyclePlan plan = PlanCycle(snapshot, std::move(pending), start, cycle_options);
  const Steady planned = clock_.Now();

  // Phase 7 (decided before the explanations, which name the victims): the head of the queue,
  // when it does not fit, may evict lower-priority gangs.
  const GangDecision* head = nullptr;
  for (const GangDecision& decision : plan.decisions) {
    if (decision.outcome == Outcome::kPlaced) {
      if (hold_ && by_request.at(decision.gang)->key == hold_->gang_key) hold_.reset();
      continue;
    }
    if (head == nullptr) head = &decision;
  }
  std::string preempt_note;
  if (head != nullptr) preempt_note = Preempt(*by_request.at(head->gang), plan, pods, start);

  // Phases 4 and 5: assume, then bind concurrently; explain the rest.
  size_t placed = 0;
  size_t waiting = 0;
  std::set<std::string> waiting_jobs;
  for (const GangDecision& decision : plan.decisions) {
    const CollectedGang& gang = *by_request.at(decision.gang);
    if (decision.outcome == Outcome::kPlaced) {
      AssumeAndBind(gang, decision.placement, first_seen_.at(gang.key),
                    PlacedMessage(plan.assumed, gang.request, decision.placement), volumes);
      ++placed;
      continue;
    }
    ++waiting;
    waiting_jobs.insert(gang.job->meta.uid);
    metrics_.attempts_unschedulable.Increment();
    Explain(gang, decision, &decision == head ? preempt_note : std::string());
  }
  const Steady dispatched = clock_.Now();

  // Elastic jobs: the largest gang that would fit now, on what is left after this cycle.
  EvaluateCapacity(plan.assumed, pods, waiting_jobs, dispatched);

  UpdateGauges(plan, pods, waiting);
  last_gauges_ = dispatched;
  ForgetStaleQueueEntries(gangs);
  metrics_.cycle_duration.Observe(Seconds(dispatched - start));
  ++cycles_;
  if (!plan.decisions.empty()) {
    log::Debug("scheduling cycle",
               {{"gangs", std::to_string(plan.decisions.size())},
                {"placed", std::to_string(placed)},
                {"waiting", std::to_string(waiting)},
                {"incomplete", std::to_string(gangs.incomplete)},
                {"collect_ms", Millis(collected - start)},
                {"snapshot_ms", Millis(snapped - collected)},
                {"plan_ms", Millis(planned - snapped)},
                {"dispatch_ms", Millis(dispatched - planned)}});
  }
}

// The PriorityClasses and binds in flight as of now, kept for the whole cycle (phases 1 and 7).
CollectInputs GangScheduler::Inputs() {
  classes_.clear();
  default_class_.reset();
  for (const auto& pc : priority_classes_.store().List()) {
    classes_[pc->meta.name] = *pc;
    if (pc->global_default) default_class_ = *pc;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_copy_ = in_flight_;
  }
  auto find_class = [this](const std::string& name) -> const PriorityClassInfo* {
    if (name.empty()) return default_class_ ? &*default_class_ : nullptr;
    auto it = classes_.find(name);
    return it == classes_.end() ? nullptr : &it->second;
  };
  CollectInputs inputs;
  inputs.find_job = [this](const std::string& key) { return jobs_.store().Get(key); };
  inputs.never_preempts = [find_class](const std::string& name) {
    const PriorityClassInfo* pc = find_class(name);
    return pc != nullptr && pc->never_preempts;
  };
  inputs.in_flight = [this](const std::string& key) { return in_flight_copy_.count(key) != 0; };
  inputs.now = clock_.WallNow();
  return inputs;
}

GangCollection GangScheduler::Collect(const std::vector<PodPtr>& pods) {
  const CollectInputs inputs = Inputs();
  CollectOptions options;
  options.scheduler_name = options_.scheduler_name;
  options.namespace_filter = options_.namespace_filter;
  // A pod whose bind succeeded but whose watch event has not arrived still looks pending: without
  // it its gang is incomplete, so it is never placed twice.
  std::vector<PodPtr> unassumed;
  unassumed.reserve(pods.size());
  for (const PodPtr& pod : pods) {
    if (!assumed_.Contains(pod->meta.Key(), pod->meta.uid)) unassumed.push_back(pod);
  }
  return CollectGangs(unassumed, inputs, options);
}

Snapshot GangScheduler::BuildSnapshot(const std::vector<PodPtr>& pods, Steady now) {
  std::map<std::string, NodeInfo> nodes;
  for (const auto& node : nodes_.store().List()) {
    NodeInfo info = ToNodeInfo(*node);
    if (info.ready && options_.node_lost && options_.node_lost(node->meta.name)) info.ready = false;
    nodes.emplace(node->meta.name, std::move(info));
  }
  // Bound pods' labels matter only to a pending pod with affinity or spread terms; without one
  // they are not copied (a pointer test per pod), so a cycle over many pods stays cheap.
  const bool with_labels = std::any_of(pods.begin(), pods.end(), [](const PodPtr& pod) {
    return pod->node_name.empty() && NeedsPodLabels(*pod);
  });
  std::unordered_map<std::string, PodPtr> by_key;
  by_key.reserve(pods.size());
  for (const PodPtr& pod : pods) {
    by_key.emplace(pod->meta.Key(), pod);
    if (!HoldsResources(*pod)) continue;
    if (auto it = nodes.find(pod->node_name); it != nodes.end()) {
      AddBoundPod(it->second, RequestsFromMilli(pod->requests));
      if (auto bound = ToBoundPod(*pod, with_labels)) it->second.pods.push_back(std::move(*bound));
    }
  }
  assumed_.ApplyTo(by_key, nodes, now);
  std::vector<NodeInfo> list;
  list.reserve(nodes.size());
  for (auto& [name, info] : nodes) list.push_back(std::move(info));
  Snapshot snapshot = Snapshot::Build(std::move(list));
  snapshot.set_pod_labels_indexed(with_labels);
  return snapshot;
}

VolumeCatalog GangScheduler::Volumes() const {
  return BuildCatalog(claims_.store().List(), volumes_.store().List(),
                      storage_classes_.store().List());
}

void GangScheduler::AssumeAndBind(const CollectedGang& gang, const Placement& placement,
                                  Steady queued_since, std::string placed_message,
                                  const VolumeCatalog& volumes) {
  auto bind = std::make_shared<GangBind>();
  bind->volume_writes = VolumeWritesFor(gang, placement, volumes);
  bind->gang = gang;
  bind->queued_since = queued_since;
  bind->placed_message = std::move(placed_message);
  bind->cycle = cycles_.load();
  metrics_.queue_wait.Observe(Seconds(clock_.Now() - queued_since));
  for (const PodAssignment& a : placement.assignments) {
    const PodPtr& pod = gang.pods[a.role][a.replica];
    assumed_.Assume(pod->meta.Key(), pod->meta.uid, a.node_name,
                    gang.request.roles[a.role].pods[a.replica].requests,
                    ToBoundPod(*pod, /*with_labels=*/true));
    bind->targets.emplace_back(pod, a.node_name);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.insert(gang.key);
  }
  binder_->Bind(std::move(bind),
                [this](const GangBind& b, const BindOutcome& outcome) { OnGangBound(b, outcome); });
}

void GangScheduler::OnGangBound(const GangBind& bind, const BindOutcome& outcome) {
  const JobInfo& job = *bind.gang.job;
  if (outcome.error.ok()) {
    metrics_.attempts_scheduled.Increment();
    metrics_.gang_duration.Observe(Seconds(clock_.Now() - bind.queued_since));
    ++gangs_bound_;
    Status written = conditions_.Write(
        job, {true, std::string(kReasonGangPlaced), bind.placed_message}, bind.cycle);
    if (!written.ok()) {
      log::Warning("cannot write Scheduled condition",
                   {{"job", job.meta.Key()}, {"error", written.ToString()}});
    }
    // A gang preempted earlier is running again: Preempted turns False (no write otherwise).
    written = conditions_.WritePreempted(job, false, "placed again after a preemption");
    if (!written.ok()) {
      log::Warning("cannot write Preempted condition",
                   {{"job", job.meta.Key()}, {"error", written.ToString()}});
    }
  } else {
    metrics_.attempts_error.Increment();
    const std::string message = "binding failed (" + outcome.error.ToString() + "); deleted " +
                                std::to_string(outcome.deleted) +
                                " pods so no partial gang holds capacity; it will be retried";
    log::Warning("gang bind failed, undone", {{"gang", bind.gang.key}, {"message", message}});
    conditions_.Event(job, kEventBindFailed, message);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(bind.gang.key);
  }
  Trigger();
}

// A gang split between bound and pending members that no bind of ours is completing (its
// scheduler was killed mid-bind, say): the bound members are deleted, as a failed bind's undo
// does, so the controller recreates them and the gang is placed whole (found by the chaos tier's
// scheduler failover test: the gang waited for ever). The key is in flight meanwhile, so no
// cycle places or undoes it twice.
bool GangScheduler::DeleteUnlessReplaced(const kube::Pod& pod) {
  kube::DeleteOptions options;
  options.precondition_uid = pod.meta.uid;
  Status del =
      client_.Delete(kube::resources::Pods(), pod.meta.namespace_, pod.meta.name, options).status();
  return del.ok() || IsNotFound(del);
}

void GangScheduler::UndoLeftover(LeftoverGang leftover) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_flight_.insert(leftover.key).second) return;
  }
  pool_->Submit([this, leftover = std::move(leftover)] {
    int deleted = 0;
    for (const PodPtr& pod : leftover.bound) {
      if (DeleteUnlessReplaced(*pod)) ++deleted;
    }
    const std::string message = "found partly bound (" + std::to_string(leftover.bound.size()) +
                                " pods bound, by a scheduler that stopped mid-bind?); deleted " +
                                std::to_string(deleted) + " so the gang is placed whole";
    log::Warning("partial gang undone", {{"gang", leftover.key}, {"message", message}});
    conditions_.Event(*leftover.job, kEventBindFailed, message);
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(leftover.key);
    }
    Trigger();
  });
}

void GangScheduler::Explain(const CollectedGang& gang, const GangDecision& decision,
                            const std::string& note) {
  ScheduledCondition condition = WaitingCondition(decision);
  condition.message += note;
  JobPtr job = gang.job;
  const int64_t cycle = cycles_.load();
  pool_->Submit([this, job, condition, cycle] {
    Status written = conditions_.Write(*job, condition, cycle);
    if (!written.ok()) {
      log::Warning("cannot write Scheduled condition",
                   {{"job", job->meta.Key()}, {"error", written.ToString()}});
    }
  });
}

void GangScheduler::UpdateGauges(const CyclePlan& plan, const std::vector<PodPtr>& pods,
                                 size_t waiting) {
  metrics_.pending_gangs.Set(static_cast<double>(waiting));
  const GpuTotals gpus = CountGpus(plan.assumed);
  metrics_.gpus_allocatable.Set(static_cast<double>(gpus.allocatable));
  metrics_.gpus_allocated.Set(static_cast<double>(gpus.allocated));
  std::vector<int64_t> per_pod;
  for (const PodPtr& pod : pods) {
    auto it = pod->requests.find(std::string(kGpu));
    if (it != pod->requests.end() && it->second > 0) per_pod.push_back(it->second / 1000);
  }
  metrics_.gpus_fragmented.Set(
      static_cast<double>(FragmentedGpus(plan.assumed, MostCommonGpuRequest(per_pod))));
}

GangScheduler::Steady GangScheduler::QueuedSince(const std::string& gang_key, Steady now) {
  return first_seen_.emplace(gang_key, now).first->second;
}

void GangScheduler::ForgetStaleQueueEntries(const GangCollection& gangs) {
  std::set<std::string> live;
  for (const CollectedGang& gang : gangs.complete) live.insert(gang.key);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = first_seen_.begin(); it != first_seen_.end();) {
    if (live.count(it->first) == 0 && in_flight_.count(it->first) == 0) {
      it = first_seen_.erase(it);
    } else {
      ++it;
    }
  }
}

void GangScheduler::EvaluateCapacity(const Snapshot& snapshot, const std::vector<PodPtr>& pods,
                                     const std::set<std::string>& waiting_jobs, Steady now) {
  // Which jobs ask, at most once per capacity_period each.
  std::map<std::string, JobPtr> due;  // by uid
  std::set<std::string> live;
  for (const JobPtr& job : jobs_.store().List()) {
    live.insert(job->meta.uid);
    if (NeedsCapacity(*job, waiting_jobs.count(job->meta.uid) != 0) == CapacityNeed::kNone) {
      continue;
    }
    auto checked = capacity_checked_.find(job->meta.uid);
    if (checked != capacity_checked_.end() && now - checked->second < options_.capacity_period) {
      continue;
    }
    due.emplace(job->meta.uid, job);
  }
  std::erase_if(capacity_checked_, [&](const auto& entry) { return live.count(entry.first) == 0; });
  if (due.empty()) return;

  std::map<std::string, std::vector<PodPtr>> pods_of;  // by job uid
  for (const PodPtr& pod : pods) {
    if (pod->meta.deletion_timestamp && !HoldsResources(*pod)) continue;
    const kube::OwnerRef* owner = pod->meta.ControllerRef();
    if (owner != nullptr && due.count(owner->uid) != 0) pods_of[owner->uid].push_back(pod);
  }
  const api::Time wall_now = clock_.WallNow();
  for (const auto& [uid, job] : due) {
    capacity_checked_[uid] = now;
    const std::optional<int32_t> feasible = ComputeCapacity(snapshot, *job, pods_of[uid], wall_now);
    if (!feasible) continue;
    JobPtr target = job;
    const int32_t n = *feasible;
    pool_->Submit([this, target, n] {
      Status written = conditions_.WriteCapacity(*target, n);
      if (!written.ok()) {
        log::Warning("cannot write status.capacity",
                     {{"job", target->meta.Key()}, {"error", written.ToString()}});
      }
    });
  }
}

}  // namespace lockstep::scheduler
