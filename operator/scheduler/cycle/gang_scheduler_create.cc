// GangScheduler's "placed at create" path (gang_scheduler.h, create_placement.h): a gang the
// controller in this process is about to create is placed now, on a cycle's snapshot and under
// the cycle's lock, and assumed before the answer is returned. Gangs asked for while another
// decision holds the lock are decided together on one snapshot (gang_scheduler.h, CreateAsk).
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "operator/api/children.h"
#include "operator/scheduler/create_placement.h"
#include "operator/scheduler/cycle/convert.h"
#include "operator/scheduler/cycle/gang_scheduler.h"
#include "operator/scheduler/cycle/placement_text.h"

namespace lockstep::scheduler {
namespace {

// How long PlaceForCreate waits for this scheduler's job cache to show the job's attempt.
constexpr std::chrono::milliseconds kJobCacheWait{500};

// The apiserver's defaulting of a container's requests (SetDefaults_Pod): a resource with a
// limit and no request is requested at its limit. The stored pod is what the binding path would
// place, so the template is read as the apiserver will store it (GPUs are often limits only).
nlohmann::json WithDefaultedRequests(nlohmann::json pod) {
  nlohmann::json& spec = pod["spec"];
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (nlohmann::json& c : spec[list]) {
      if (!c.contains("resources") || !c["resources"].contains("limits")) continue;
      nlohmann::json& resources = c["resources"];
      for (const auto& [name, limit] : resources["limits"].items()) {
        if (!resources.contains("requests") || !resources["requests"].contains(name)) {
          resources["requests"][name] = limit;
        }
      }
    }
  }
  return pod;
}

std::string Label(const kube::Pod& pod, std::string_view key) {
  auto it = pod.meta.labels.find(std::string(key));
  return it == pod.meta.labels.end() ? std::string() : it->second;
}

// The gang key of a member pod, as gangs.cc groups them.
std::string GangKeyOf(const kube::Pod& pod) {
  return pod.meta.namespace_ + "/" + Label(pod, api::kLabelJobName) + "/" +
         Label(pod, api::kLabelAttempt);
}

}  // namespace

std::string GangScheduler::BindOnlyKey(const std::string& job_uid, const std::string& gang_key) {
  return job_uid + "|" + gang_key;
}

StatusOr<GangScheduler::CreateGrant> GangScheduler::PlaceForCreate(
    const std::vector<nlohmann::json>& objects) {
  std::vector<PodPtr> pods;
  for (const nlohmann::json& object : objects) {
    StatusOr<kube::Pod> pod = kube::DecodePod(WithDefaultedRequests(object));
    if (!pod.ok()) {
      metrics_.create_fallback.Increment();
      return FailedPreconditionError("cannot read a pod to create: " + pod.status().ToString());
    }
    pods.push_back(std::make_shared<const kube::Pod>(std::move(*pod)));
  }
  // Caches still listing cannot place anything: say so at once rather than after the job cache
  // wait below (a new leader whose caches started late spent that wait on every first create).
  if (!HasSynced()) {
    metrics_.create_fallback.Increment();
    return FailedPreconditionError("the scheduler's caches have not synced: " + UnsyncedCaches());
  }
  const auto asked = clock_.Now();
  if (!pods.empty()) WaitForJobCache(*pods.front());
  const auto cache_seen = clock_.Now();
  metrics_.create_job_cache_wait.Observe(std::chrono::duration<double>(cache_seen - asked).count());
  StatusOr<CreateGrant> grant = DecideForCreate(std::move(pods));
  metrics_.create_decision.Observe(
      std::chrono::duration<double>(clock_.Now() - cache_seen).count());
  if (!grant.ok()) metrics_.create_fallback.Increment();
  return grant;
}

// The controller and this scheduler watch TrainingJobs on informers of their own: a new job's
// first pass (or a restart's first create) may come before this scheduler's cache shows the job
// at the pods' attempt, and the gang would not be complete for it. Waits a little for it, outside
// the decision's lock; a cache still behind then makes the gang fall back.
void GangScheduler::WaitForJobCache(const kube::Pod& pod) {
  const kube::OwnerRef* owner = pod.meta.ControllerRef();
  const std::optional<int32_t> attempt = PodAttempt(pod);
  if (owner == nullptr || !attempt) return;
  const std::string key = pod.meta.namespace_ + "/" + Label(pod, api::kLabelJobName);
  const auto deadline = clock_.Now() + kJobCacheWait;
  while (true) {
    JobPtr job = jobs_.store().Get(key);
    if (job != nullptr && job->meta.uid == owner->uid && job->status_attempt >= *attempt) return;
    if (clock_.Now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// What every decision of one batch reads, built when its first ask gets past the checks that
// need no snapshot: the pods as the cache holds them, the gangs that have live pods already, the
// binding path's queue, and the snapshot, on which the batch's grants are assumed one by one.
struct GangScheduler::CreateBatch {
  std::vector<PodPtr> cluster;
  std::set<std::string> live_gangs;  // gang keys with a live (not deleted, not finished) member
  GangCollection queue;
  std::vector<PendingGang> waiting;  // points into queue
  std::optional<Snapshot> snapshot;
  CycleOptions cycle;
};

StatusOr<GangScheduler::CreateGrant> GangScheduler::DecideForCreate(std::vector<PodPtr> pods) {
  if (!HasSynced()) {
    return FailedPreconditionError("the scheduler's caches have not synced: " + UnsyncedCaches());
  }
  auto ask = std::make_shared<CreateAsk>();
  ask->pods = std::move(pods);
  {
    std::lock_guard<std::mutex> lock(asks_mu_);
    asks_.push_back(ask);
  }
  std::lock_guard<std::mutex> decide(decide_mu_);
  // A holder of the lock before us took our ask into its batch and answered it; otherwise it is
  // still queued, and we decide it with every other ask queued by now.
  if (!ask->answer) {
    std::vector<std::shared_ptr<CreateAsk>> batch;
    {
      std::lock_guard<std::mutex> lock(asks_mu_);
      batch.swap(asks_);
    }
    DecideCreateBatch(batch);
  }
  return std::move(*ask->answer);
}

void GangScheduler::DecideCreateBatch(const std::vector<std::shared_ptr<CreateAsk>>& asks) {
  ++create_batches_;
  const Steady now = clock_.Now();
  std::unique_ptr<CreateBatch> batch;  // built by the first ask that needs it
  for (const std::shared_ptr<CreateAsk>& ask : asks) {
    ask->answer = DecideOneCreate(ask->pods, now, batch);
  }
}

std::unique_ptr<GangScheduler::CreateBatch> GangScheduler::NewCreateBatch(Steady now) {
  auto batch = std::make_unique<CreateBatch>();
  batch->cluster = pods_.store().List();
  for (const PodPtr& pod : batch->cluster) {
    if (!pod->meta.deletion_timestamp && !pod->IsTerminal() &&
        pod->meta.labels.count(std::string(api::kLabelJobName)) != 0) {
      batch->live_gangs.insert(GangKeyOf(*pod));
    }
  }
  // The binding path's queue as of now: every complete pending gang.
  batch->queue = Collect(batch->cluster);
  for (const CollectedGang& w : batch->queue.complete) {
    auto seen = first_seen_.find(w.key);
    batch->waiting.push_back({&w.request, seen == first_seen_.end() ? now : seen->second});
  }
  batch->snapshot.emplace(BuildSnapshot(batch->cluster, now));
  batch->cycle.reserve_after = options_.reserve_after;
  if (hold_) batch->cycle.held = hold_->capacity;
  return batch;
}

StatusOr<GangScheduler::CreateGrant> GangScheduler::DecideOneCreate(
    const std::vector<PodPtr>& pods, Steady now, std::unique_ptr<CreateBatch>& batch) {
  // The same checks a cycle's phase 1 makes: ours, unbound, of the job's current attempt as this
  // scheduler's cache holds it (its excluded nodes included), every expected pod exactly once.
  CollectOptions collect;
  collect.scheduler_name = options_.scheduler_name;
  collect.namespace_filter = options_.namespace_filter;
  GangCollection mine = CollectGangs(pods, Inputs(), collect);
  if (mine.complete.size() != 1 || mine.incomplete != 0 || mine.stale != 0) {
    return FailedPreconditionError(
        "not one complete gang of the job's current attempt as the scheduler's caches hold it");
  }
  CollectedGang gang = std::move(mine.complete.front());
  // Volumes are bound (or a node selected for them) before a pod is bound, and a generic
  // ephemeral volume's claim exists only once its pod does: the binding cycle does both.
  if (std::any_of(pods.begin(), pods.end(),
                  [](const PodPtr& pod) { return HasVolumeClaims(*pod); })) {
    return FailedPreconditionError(
        "PersistentVolumeClaims: placed by the binding cycle, which binds their volumes first");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return FailedPreconditionError("the scheduler is stopping");
    if (bind_only_.count(BindOnlyKey(gang.job->meta.uid, gang.key)) != 0) {
      return FailedPreconditionError("this attempt was created placed once and undone");
    }
    if (creating_.count(gang.key) != 0) {
      return FailedPreconditionError("this gang's placed creates are in flight already");
    }
  }
  if (batch == nullptr) batch = NewCreateBatch(now);
  if (batch->live_gangs.count(gang.key) != 0) {
    return FailedPreconditionError("pods of this gang exist already");
  }
  Snapshot& snapshot = *batch->snapshot;
  // The batch's snapshot holds bound pods' labels only when a pending pod needed them; a gang
  // whose affinity or spread terms would read them waits for the binding cycle instead.
  const bool needs_labels =
      std::any_of(pods.begin(), pods.end(), [](const PodPtr& pod) { return NeedsPodLabels(*pod); });
  if (needs_labels && !snapshot.pod_labels_indexed()) {
    return FailedPreconditionError(
        "inter-pod affinity or spread terms: placed by the binding cycle, which sees every pod's "
        "labels");
  }
  CreatePlacementDecision decision =
      DecideCreatePlacement(snapshot, gang.request, batch->waiting, now, batch->cycle);
  if (decision.outcome != CreatePlacementOutcome::kPlace) {
    return FailedPreconditionError(std::string(CreatePlacementOutcomeName(decision.outcome)) +
                                   ": " + decision.reason);
  }

  // Assumed on the batch's snapshot too: the next ask of the batch sees this gang's nodes taken.
  AssumePlacement(snapshot, gang.request, decision.placement);
  CreatePlaced record;
  record.granted = now;
  record.placed_message =
      PlacedMessage(snapshot, gang.request, decision.placement) + " (created placed)";
  record.cycle = cycles_.load();
  CreateGrant grant;
  grant.gang_key = gang.key;
  for (const PodAssignment& a : decision.placement.assignments) {
    const PodPtr& pod = gang.pods[a.role][a.replica];
    const PodRequest& request = gang.request.roles[a.role].pods[a.replica];
    assumed_.AssumeCreate(pod->meta.Key(), a.node_name, request.requests,
                          ToBoundPod(*pod, /*with_labels=*/true));
    record.node_of[pod->meta.Key()] = a.node_name;
    record.requests[pod->meta.Key()] = request;
    grant.node_of[pod->meta.name] = a.node_name;
  }
  record.gang = std::move(gang);
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.insert(grant.gang_key);
    creating_[grant.gang_key] = std::move(record);
  }
  return grant;
}

Status GangScheduler::FinishCreate(const std::string& gang_key,
                                   const std::vector<nlohmann::json>& created, bool whole) {
  CreatePlaced record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = creating_.find(gang_key);
    if (it == creating_.end()) return NotFoundError("no placement granted for " + gang_key);
    record = std::move(it->second);
    creating_.erase(it);
  }
  const JobInfo& job = *record.gang.job;
  Status verdict;
  std::set<std::string> created_keys;
  for (const nlohmann::json& object : created) {
    StatusOr<kube::Pod> pod = kube::DecodePod(object);
    if (!pod.ok()) {
      if (verdict.ok()) verdict = pod.status().WithContext("a created pod");
      continue;
    }
    const std::string key = pod->meta.Key();
    created_keys.insert(key);
    // Counted as assumed until a cycle's pod list shows this uid, even if the informer has it
    // already: a list taken before it arrived would count it nowhere (assumed_pods.h).
    assumed_.Created(key, pod->meta.uid, clock_.Now());
    auto placed = record.requests.find(key);
    auto node = record.node_of.find(key);
    if (placed == record.requests.end() || node == record.node_of.end() ||
        pod->node_name != node->second || !PlacedRequestHolds(placed->second, ToPodRequest(*pod))) {
      if (verdict.ok()) {
        verdict = FailedPreconditionError(
            "pod " + key + " was stored with other requests, selectors or tolerations than it "
            "was placed with (admission changed it): its placement may not hold");
      }
    }
  }
  // Pods never created hold nothing.
  for (const auto& [key, node] : record.node_of) {
    if (created_keys.count(key) == 0) assumed_.Forget(key);
  }
  if (whole && verdict.ok()) {
    metrics_.create_placed.Increment();
    metrics_.attempts_scheduled.Increment();
    metrics_.gang_duration.Observe(std::chrono::duration<double>(clock_.Now() - record.granted)
                                       .count());
    ++gangs_bound_;
    ++gangs_created_placed_;
    JobPtr target = record.gang.job;
    // Under mu_: Stop() sets stopping_ under it before the pool goes.
    std::lock_guard<std::mutex> lock(mu_);
    auto write = [this, target, message = record.placed_message, cycle = record.cycle] {
      Status written =
          conditions_.Write(*target, {true, std::string(kReasonGangPlaced), message}, cycle);
      if (!written.ok()) {
        log::Warning("cannot write Scheduled condition",
                     {{"job", target->meta.Key()}, {"error", written.ToString()}});
      }
      written = conditions_.WritePreempted(*target, false, "placed again after a preemption");
      if (!written.ok()) {
        log::Warning("cannot write Preempted condition",
                     {{"job", target->meta.Key()}, {"error", written.ToString()}});
      }
    };
    if (!stopping_) pool_->Submit(std::move(write));
  } else {
    metrics_.create_undone.Increment();
    const std::string message =
        "created placed, but " +
        (verdict.ok() ? std::string("only ") + std::to_string(created.size()) + " of " +
                            std::to_string(record.node_of.size()) + " pods were created"
                      : verdict.message()) +
        "; the created pods are deleted so no partial gang holds capacity, and it is placed again";
    log::Warning("gang created placed undone", {{"gang", gang_key}, {"message", message}});
    conditions_.Event(job, kEventBindFailed, message);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(gang_key);
    // Undone once: this attempt is left to the binding path (a create that keeps failing with
    // nodeName set, or an admission that keeps changing the pods, never loops).
    if (!whole || !verdict.ok()) bind_only_.insert(BindOnlyKey(job.meta.uid, gang_key));
  }
  Trigger();
  return verdict;
}

}  // namespace lockstep::scheduler
