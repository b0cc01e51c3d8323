#include "operator/controller/reconciler.h"

#include <future>
#include <set>

#include "common/log.h"
#include "operator/api/children.h"
#include "operator/api/codec.h"
#include "operator/api/enums.h"
#include "operator/api/network_policy.h"
#include "operator/api/token.h"
#include "operator/controller/inplace_plan.h"
#include "operator/controller/job_status.h"

namespace lockstep::controller {
namespace {

InvolvedObject Involved(const CachedJob& job) {
  return {std::string(api::kApiVersion), std::string(api::kKind), job.meta.namespace_,
          job.meta.name, job.meta.uid, job.meta.resource_version};
}

std::string PodName(const nlohmann::json& pod) {
  return pod["metadata"]["name"].get<std::string>();
}

}  // namespace

TrainingJobReconciler::TrainingJobReconciler(kube::RestClient& client, const JobCaches& caches,
                                             Expectations& expectations, EventRecorder& events,
                                             ControllerMetrics* metrics, PlanOptions options,
                                             const Clock& clock)
    : client_(client),
      caches_(caches),
      expectations_(expectations),
      events_(events),
      metrics_(metrics),
      options_(std::move(options)),
      clock_(clock) {}

StatusOr<ReconcileResult> TrainingJobReconciler::Reconcile(const std::string& key) {
  std::shared_ptr<const CachedJob> cached = caches_.GetJob(key);
  if (cached == nullptr) {
    expectations_.Forget(key);  // deleted: its children go with the garbage collector
    if (launchers_ != nullptr) launchers_->Forget(key);
    return ReconcileResult{};
  }
  const CachedJob job = *cached;  // never mutate the shared cache
  if (StatusCacheBehind(job)) return ReconcileResult{std::chrono::seconds(1)};
  const bool settled = expectations_.Satisfied(key);  // before listing pods
  Observed observed = caches_.ObserveChildren(job);
  if (launchers_ != nullptr) {
    if (const kube::Pod* rank0 = RendezvousPod(job.job, observed.pods)) {
      observed.launchers = launchers_->Latest(key, rank0->meta.uid);
    }
  }
  const Plan plan = ComputePlan(job, observed, clock_.WallNow(), settled, options_);
  const bool finishes = IsFinished(plan.status) && !IsFinished(job.job.status);
  if (plan.restart || plan.launcher_restart || finishes) {
    // A restart or the job's end is recorded before its pods are deleted: if the write lost a
    // race, nothing was done and the next pass decides again from the same evidence. Acting
    // first could delete the lost node's pods and leave attempt N without its record, and the
    // next pass would refill attempt N instead of starting N+1 (or, for an end, recreate the
    // pods cleanPodPolicy deleted). A finished job's later passes clean its pods again.
    LS_RETURN_IF_ERROR(PersistStatus(job, plan));
    AskLaunchers(job, observed, plan);
    LS_RETURN_IF_ERROR(Act(job, plan));
    return ReconcileResult{plan.requeue_after};
  }
  Status acted = Act(job, plan);
  if (plan.delete_job) return ReconcileResult{};
  LS_RETURN_IF_ERROR(PersistStatus(job, plan));
  AskLaunchers(job, observed, plan);
  LS_RETURN_IF_ERROR(acted);
  return ReconcileResult{plan.requeue_after};
}

void TrainingJobReconciler::AskLaunchers(const CachedJob& job, const Observed& observed,
                                         const Plan& plan) {
  if (launchers_ == nullptr) return;
  auto target = [&](const std::string& pod_name) -> std::optional<LauncherJob> {
    for (const kube::Pod& pod : observed.pods) {
      if (pod.meta.name != pod_name || pod.pod_ip.empty()) continue;
      return LauncherJob{job.meta.Key(), job.meta.namespace_, job.meta.name,
                         job.meta.uid,   pod.meta.uid,        pod.pod_ip};
    }
    return std::nullopt;
  };
  if (plan.launcher_restart) {
    if (std::optional<LauncherJob> t = target(plan.launcher_restart->pod)) {
      launchers_->Restart(*t, plan.launcher_restart->request, plan.launcher_restart->reason);
    }
  } else if (plan.launcher_poll) {
    if (std::optional<LauncherJob> t = target(*plan.launcher_poll)) launchers_->Poll(*t);
  }
}

Status TrainingJobReconciler::Act(const CachedJob& job, const Plan& plan) {
  if (plan.delete_job) return DeleteJob(job);
  LS_RETURN_IF_ERROR(CreateSharedChildren(job, plan));
  LS_RETURN_IF_ERROR(CreatePods(job, plan));
  return DeletePods(job, plan);
}

Status TrainingJobReconciler::CreateSharedChildren(const CachedJob& job, const Plan& plan) {
  const std::string& ns = job.meta.namespace_;
  if (plan.create_service) {
    StatusOr<nlohmann::json> r =
        client_.Create(kube::resources::Services(), ns, api::BuildService(job.job));
    if (!r.ok() && !IsAlreadyExists(r.status())) return r.status().WithContext("create service");
  }
  if (plan.create_secret) {
    LS_ASSIGN_OR_RETURN(std::string token, api::GenerateRdzvToken());
    StatusOr<nlohmann::json> r =
        client_.Create(kube::resources::Secrets(), ns, api::BuildRdzvSecret(job.job, token));
    if (!r.ok() && !IsAlreadyExists(r.status())) return r.status().WithContext("create secret");
    // AlreadyExists: a previous pass created it (its token is the one the pods use, keep it),
    // or someone else did, and then no pod of this job may use it.
    if (!r.ok()) LS_RETURN_IF_ERROR(CheckSecretOwner(job));
  }
  if (plan.create_network_policy) {
    StatusOr<nlohmann::json> r =
        client_.Create(kube::resources::NetworkPolicies(), ns,
                       api::BuildNetworkPolicy(job.job, options_.operator_peer));
    if (!r.ok() && !IsAlreadyExists(r.status())) {
      return r.status().WithContext("create network policy");
    }
  }
  return Status::Ok();
}

Status TrainingJobReconciler::CheckSecretOwner(const CachedJob& job) {
  const std::string name = api::RdzvSecretName(job.meta.name);
  StatusOr<nlohmann::json> secret = client_.Get(kube::resources::Secrets(), job.meta.namespace_,
                                                name);
  if (!secret.ok()) return secret.status().WithContext("get secret " + name);
  StatusOr<kube::ObjectMeta> meta = kube::DecodeObjectMeta(*secret);
  if (!meta.ok()) return meta.status().WithContext("secret " + name);
  const kube::OwnerRef* owner = meta->ControllerRef();
  if (owner != nullptr && owner->uid == job.meta.uid) return Status::Ok();
  const std::string message = "secret " + name + " exists but is not this job's (" +
                              (owner == nullptr ? std::string("no controller")
                                                : "controlled by " + owner->kind + " " +
                                                      owner->name) +
                              "): its token is not used and no pod is created until it is "
                              "deleted";
  Emit(job, {"Warning", "SecretNotOwned", message});
  return FailedPreconditionError(message);
}

Status TrainingJobReconciler::CreatePods(const CachedJob& job, const Plan& plan) {
  const std::string key = job.meta.Key();
  const size_t total = std::min<size_t>(plan.pod_creates.size(), kMaxCreatesPerPass);
  size_t created = 0;
  Status first_error;
  for (size_t start = 0, batch = 1; start < total && first_error.ok(); start += batch,
              batch *= 2) {
    const size_t end = std::min(total, start + batch);
    std::vector<std::string> names;
    for (size_t i = start; i < end; ++i) names.push_back(PodName(plan.pod_creates[i]));
    expectations_.ExpectCreations(key, names);
    std::vector<std::future<StatusOr<nlohmann::json>>> calls;
    for (size_t i = start; i < end; ++i) {
      calls.push_back(std::async(std::launch::async, [this, &job, &plan, i] {
        return client_.Create(kube::resources::Pods(), job.meta.namespace_, plan.pod_creates[i]);
      }));
    }
    for (size_t i = 0; i < calls.size(); ++i) {
      StatusOr<nlohmann::json> r = calls[i].get();
      if (r.ok()) {
        ++created;
        continue;
      }
      // This create will never be observed as ours: stop waiting for it.
      expectations_.CreationObserved(key, names[i]);
      if (first_error.ok()) first_error = r.status().WithContext("create pod " + names[i]);
    }
  }
  if (created > 0) {
    log::Info("created pods", {{"job", key}, {"count", std::to_string(created)}});
  }
  if (!first_error.ok() && !IsAlreadyExists(first_error)) {
    Emit(job, {"Warning", "FailedCreate", first_error.message()});
  }
  return first_error;
}

Status TrainingJobReconciler::DeletePods(const CachedJob& job, const Plan& plan) {
  const std::string key = job.meta.Key();
  Status first_error;
  int issued = 0;
  for (const PodDeletion& d : plan.pod_deletes) {
    if (issued++ >= kMaxDeletesPerPass) break;
    expectations_.ExpectDeletions(key, {d.uid});
    kube::DeleteOptions opts;
    opts.precondition_uid = d.uid;
    opts.propagation_policy = "Background";
    opts.grace_period_seconds = d.grace_period_seconds;
    StatusOr<nlohmann::json> r =
        client_.Delete(kube::resources::Pods(), job.meta.namespace_, d.name, opts);
    if (r.ok()) continue;
    expectations_.DeletionObserved(key, d.uid);
    if (IsNotFound(r.status()) || kube::IsConflict(r.status())) continue;  // already gone
    first_error = r.status().WithContext("delete pod " + d.name);
    break;
  }
  return first_error;
}

Status TrainingJobReconciler::DeleteJob(const CachedJob& job) {
  kube::DeleteOptions opts;
  opts.precondition_uid = job.meta.uid;
  opts.propagation_policy = "Background";
  StatusOr<nlohmann::json> r = client_.Delete(kube::resources::TrainingJobs(),
                                              job.meta.namespace_, job.meta.name, opts);
  if (!r.ok() && !IsNotFound(r.status())) return r.status().WithContext("delete job (TTL)");
  log::Info("deleted finished job after its TTL", {{"job", job.meta.Key()}});
  return Status::Ok();
}

nlohmann::json StatusPatch(const api::TrainingJobStatus& old_status,
                           const api::TrainingJobStatus& new_status,
                           const std::string& resource_version) {
  const nlohmann::json before = api::EncodeStatus(old_status);
  nlohmann::json after = api::EncodeStatus(new_status);
  if (before == after) return nullptr;
  for (const auto& [field, value] : before.items()) {
    if (!after.contains(field)) after[field] = nullptr;  // merge patch: null removes
  }
  return {{"metadata", {{"resourceVersion", resource_version}}}, {"status", std::move(after)}};
}

nlohmann::json ConditionsPatch(const CachedJob& job, const api::TrainingJobStatus& new_status) {
  auto encode = [&job](const std::vector<api::Condition>& conditions) {
    nlohmann::json out = nlohmann::json::array();
    std::set<std::string> types;
    for (const api::Condition& c : conditions) {
      out.push_back(api::EncodeCondition(c));
      types.insert(c.type);
    }
    // Kept as they are, unless one of ours now has that type (the list is keyed by type).
    for (const nlohmann::json& raw : job.unread_conditions) {
      const nlohmann::json* type = raw.is_object() && raw.contains("type") ? &raw["type"] : nullptr;
      if (type == nullptr || !type->is_string() || types.count(type->get<std::string>()) == 0) {
        out.push_back(raw);
      }
    }
    return out;
  };
  nlohmann::json after = encode(new_status.conditions);
  if (after == encode(job.job.status.conditions)) return nullptr;
  return {{"metadata", {{"resourceVersion", job.meta.resource_version}}},
          {"status", {{"conditions", std::move(after)}}}};
}

bool CacheShows(const StatusWrite& written, const api::TrainingJobStatus& cached) {
  return (!written.finished || IsFinished(cached)) && cached.attempt >= written.attempt;
}

bool TrainingJobReconciler::StatusCacheBehind(const CachedJob& job) {
  std::lock_guard<std::mutex> lock(status_writes_mu_);
  auto it = status_writes_.find(job.meta.uid);
  if (it == status_writes_.end()) return false;
  // Once the cache shows the write, it has caught up with it for good.
  if (CacheShows(it->second, job.job.status) ||
      clock_.Now() - it->second.when > std::chrono::minutes(1)) {
    status_writes_.erase(it);
    return false;
  }
  return true;
}

void TrainingJobReconciler::NoteStatusWrite(const CachedJob& job, const Plan& plan) {
  const bool finishes = IsFinished(plan.status) && !IsFinished(job.job.status);
  const bool restarts = plan.status.attempt > job.job.status.attempt;
  if (!finishes && !restarts) return;
  std::lock_guard<std::mutex> lock(status_writes_mu_);
  status_writes_[job.meta.uid] = {clock_.Now(), finishes, plan.status.attempt};
}

Status TrainingJobReconciler::PersistStatus(const CachedJob& job, const Plan& plan) {
  const nlohmann::json patch =
      plan.conditions_only ? ConditionsPatch(job, plan.status)
                           : StatusPatch(job.job.status, plan.status, job.meta.resource_version);
  if (!patch.is_null()) {
    StatusOr<nlohmann::json> r = client_.MergePatch(
        kube::resources::TrainingJobs(), job.meta.namespace_, job.meta.name, patch, "status");
    if (!r.ok()) {
      if (IsNotFound(r.status())) return Status::Ok();  // deleted meanwhile
      return r.status().WithContext("update status");
    }
    NoteStatusWrite(job, plan);
  }
  for (const EventSpec& e : plan.events) Emit(job, e);
  RecordMetrics(job, plan);
  return Status::Ok();
}

void TrainingJobReconciler::Emit(const CachedJob& job, const EventSpec& event) {
  events_.Record(Involved(job), event.type, event.reason, event.message);
}

void TrainingJobReconciler::RecordMetrics(const CachedJob& job, const Plan& plan) {
  if (metrics_ == nullptr) return;
  const std::string framework(api::ToString(job.job.spec.framework));
  if (plan.outcome != Outcome::kNone) {
    metrics_->ObserveOutcome(job.meta.namespace_, framework,
                             plan.outcome == Outcome::kSucceeded ? "Succeeded" : "Failed");
  }
  if (plan.restart) {
    metrics_->ObserveRestart(job.meta.namespace_, plan.restart->reason, plan.restart->mode);
    if (plan.restart->detection_delay_seconds) {
      metrics_->ObserveDetectionDelay(plan.restart->reason, *plan.restart->detection_delay_seconds);
    }
  }
  if (plan.recovery_seconds && plan.status.last_restart) {
    metrics_->ObserveRecovery(job.meta.namespace_, plan.status.last_restart->mode,
                              *plan.recovery_seconds);
  }
  if (plan.became_running && job.job.metadata.creation_timestamp) {
    const std::chrono::duration<double> took =
        clock_.WallNow() - *job.job.metadata.creation_timestamp;
    metrics_->ObserveTimeToRunning(job.meta.namespace_, framework, took.count());
  }
}

}  // namespace lockstep::controller
