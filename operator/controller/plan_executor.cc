#include "operator/controller/plan_executor.h"

#include <algorithm>
#include <future>
#include <vector>

#include "common/log.h"
#include "operator/api/children.h"
#include "operator/api/token.h"

namespace lockstep::controller {
namespace {

std::string PodName(const nlohmann::json& pod) {
  return pod["metadata"]["name"].get<std::string>();
}

}  // namespace

kube::InvolvedObject InvolvedJob(const CachedJob& job) {
  return {std::string(api::kApiVersion), std::string(api::kKind), job.meta.namespace_,
          job.meta.name, job.meta.uid, job.meta.resource_version};
}

Status PlanExecutor::Act(const CachedJob& job, const Plan& plan) {
  if (plan.delete_job) return DeleteJob(job);
  LS_RETURN_IF_ERROR(CreateSharedChildren(job, plan));
  LS_RETURN_IF_ERROR(CreatePods(job, plan));
  return DeletePods(job, plan);
}

Status PlanExecutor::CreateSharedChildren(const CachedJob& job, const Plan& plan) {
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
    // AlreadyExists: a previous pass created it; its token is the one the pods use, keep it.
    if (!r.ok() && !IsAlreadyExists(r.status())) return r.status().WithContext("create secret");
  }
  return Status::Ok();
}

Status PlanExecutor::CreatePods(const CachedJob& job, const Plan& plan) {
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
    events_.Record(InvolvedJob(job), "Warning", "FailedCreate", first_error.message());
  }
  return first_error;
}

Status PlanExecutor::DeletePods(const CachedJob& job, const Plan& plan) {
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

Status PlanExecutor::DeleteJob(const CachedJob& job) {
  kube::DeleteOptions opts;
  opts.precondition_uid = job.meta.uid;
  opts.propagation_policy = "Background";
  StatusOr<nlohmann::json> r = client_.Delete(kube::resources::TrainingJobs(),
                                              job.meta.namespace_, job.meta.name, opts);
  if (!r.ok() && !IsNotFound(r.status())) return r.status().WithContext("delete job (TTL)");
  log::Info("deleted finished job after its TTL", {{"job", job.meta.Key()}});
  return Status::Ok();
}

}  // namespace lockstep::controller
