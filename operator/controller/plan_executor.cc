#include "operator/controller/plan_executor.h"

#include <algorithm>
#include <future>
#include <optional>
#include <vector>

#include "common/log.h"
#include "operator/api/children.h"
#include "operator/api/token.h"
#include "operator/kueue/workload.h"

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

Status PlanExecutor::Act(const CachedJob& job, const Plan& plan, CreatePath path) {
  if (plan.delete_job) return DeleteJob(job);
  LS_RETURN_IF_ERROR(CreateSharedChildren(job, plan));
  std::optional<Status> placed;
  if (path == CreatePath::kPlaced && placer_ != nullptr) placed = CreatePlacedPods(job, plan);
  if (placed) {
    LS_RETURN_IF_ERROR(*placed);
  } else {
    LS_RETURN_IF_ERROR(CreatePods(job, plan));
  }
  LS_RETURN_IF_ERROR(DeletePods(job, plan));
  LS_RETURN_IF_ERROR(WriteWorkloads(job, plan));
  // Last: a slice that cannot be written only delays a rendezvous by name; written first, its
  // failure would also hold back the Workload's writes.
  return ApplyEndpointSlices(job, plan);
}

// Server-side apply, forced: the slice is the operator's alone (a field someone else set is taken
// back), and one request creates or updates it whatever this pass's cache said about it.
Status PlanExecutor::ApplyEndpointSlices(const CachedJob& job, const Plan& plan) {
  for (const nlohmann::json& slice : plan.endpoint_slices) {
    const std::string name = slice["metadata"]["name"].get<std::string>();
    StatusOr<nlohmann::json> r = client_.Apply(kube::resources::EndpointSlices(),
                                               job.meta.namespace_, name, slice, /*force=*/true);
    if (!r.ok()) return r.status().WithContext("apply endpoint slice " + name);
  }
  return Status::Ok();
}

Status PlanExecutor::WriteWorkload(const CachedJob& job, const kueue::WorkloadWrite& w) {
  using Kind = kueue::WorkloadWrite::Kind;
  const std::string& ns = job.meta.namespace_;
  StatusOr<nlohmann::json> r = nlohmann::json();
  switch (w.kind) {
    case Kind::kCreate:
      r = client_.Create(kueue::Workloads(), ns, w.body);
      if (r.ok()) {
        events_.Record(InvolvedJob(job), "Normal", "CreatedWorkload",
                       "created Workload " + w.name + " for Kueue");
      }
      if (!r.ok() && IsAlreadyExists(r.status())) return Status::Ok();  // a pass before made it
      break;
    case Kind::kDelete: {
      kube::DeleteOptions opts;
      opts.precondition_uid = w.uid;
      opts.propagation_policy = "Background";
      r = client_.Delete(kueue::Workloads(), ns, w.name, opts);
      if (!r.ok() && IsNotFound(r.status())) return Status::Ok();
      break;
    }
    case Kind::kPatchSpec:
      r = client_.MergePatch(kueue::Workloads(), ns, w.name, w.body);
      break;
    case Kind::kPatchStatus:
      r = client_.MergePatch(kueue::Workloads(), ns, w.name, w.body, "status");
      break;
  }
  // A conflict: Kueue wrote the Workload since the cache showed it; the next pass (its watch
  // event enqueues the job) decides again from what Kueue wrote.
  if (!r.ok()) return r.status().WithContext("workload " + w.name);
  return Status::Ok();
}

Status PlanExecutor::WriteWorkloads(const CachedJob& job, const Plan& plan) {
  for (const kueue::WorkloadWrite& w : plan.workload_writes) {
    LS_RETURN_IF_ERROR(WriteWorkload(job, w));
  }
  return Status::Ok();
}

// The Service, the Secret and the NetworkPolicy are independent of each other: created at once
// (one round trip instead of three; a job's first pass is latency-bound, bench/peers). Both the
// Secret and the NetworkPolicy still come before any pod: a pod must never run with a token that
// is not this job's, nor before its rendezvous port is fenced. No cache says whether the Secret
// exists (the operator may not list Secrets, job_caches.h), so a pass that creates pods makes
// sure of it here, from the API server: create, or on AlreadyExists a GET of its owner. Nothing
// is remembered between passes: a Secret deleted since the last pass is made again before the
// next pod (whose launcher reads the token from it).
Status PlanExecutor::CreateSharedChildren(const CachedJob& job, const Plan& plan) {
  const std::string& ns = job.meta.namespace_;
  using Call = std::future<StatusOr<nlohmann::json>>;
  const auto create = [&](kube::ResourceRef resource, nlohmann::json object) -> Call {
    return std::async(std::launch::async, [this, resource, &ns, object = std::move(object)] {
      return client_.Create(resource, ns, object);
    });
  };
  std::optional<Call> service, secret, policy;
  if (plan.create_service) service = create(kube::resources::Services(), api::BuildService(job.job));
  if (plan.create_secret || !plan.pod_creates.empty()) {
    StatusOr<std::string> token = api::GenerateRdzvToken();
    if (!token.ok()) return token.status();
    secret = create(kube::resources::Secrets(), api::BuildRdzvSecret(job.job, *token));
  }
  if (plan.create_network_policy) {
    policy = create(kube::resources::NetworkPolicies(),
                    api::BuildNetworkPolicy(job.job, operator_peer_));
  }
  // Every call is waited for (the futures' threads use `this`), then the first error returned.
  const auto result = [](std::optional<Call>& call) -> StatusOr<nlohmann::json> {
    return call ? call->get() : StatusOr<nlohmann::json>(nlohmann::json());
  };
  StatusOr<nlohmann::json> service_r = result(service);
  StatusOr<nlohmann::json> secret_r = result(secret);
  StatusOr<nlohmann::json> policy_r = result(policy);
  if (!service_r.ok() && !IsAlreadyExists(service_r.status())) {
    return service_r.status().WithContext("create service");
  }
  if (!secret_r.ok() && !IsAlreadyExists(secret_r.status())) {
    return secret_r.status().WithContext("create secret");
  }
  // AlreadyExists: a previous pass created it (its token is the one the pods use, keep it),
  // or someone else did, and then no pod of this job may use it.
  if (!secret_r.ok()) {
    LS_RETURN_IF_ERROR(CheckOwner(job, kube::resources::Secrets(),
                                  api::RdzvSecretName(job.meta.name), "secret", "SecretNotOwned",
                                  "its token is not used"));
  }
  if (!policy_r.ok() && !IsAlreadyExists(policy_r.status())) {
    return policy_r.status().WithContext("create network policy");
  }
  // AlreadyExists here too: ours from a previous pass, or a squatter's, whose rules (allow all,
  // say) would then stand in for the job's fence.
  if (!policy_r.ok()) {
    LS_RETURN_IF_ERROR(CheckOwner(job, kube::resources::NetworkPolicies(),
                                  api::NetworkPolicyName(job.meta.name), "networkpolicy",
                                  "NetworkPolicyNotOwned", "it would fence the job's pods"));
  }
  return Status::Ok();
}

Status PlanExecutor::CheckOwner(const CachedJob& job, const kube::ResourceRef& resource,
                                const std::string& name, std::string_view what,
                                std::string_view reason, std::string_view consequence) {
  StatusOr<nlohmann::json> object = client_.Get(resource, job.meta.namespace_, name);
  if (!object.ok()) return object.status().WithContext("get " + std::string(what) + " " + name);
  StatusOr<kube::ObjectMeta> meta = kube::DecodeObjectMeta(*object);
  if (!meta.ok()) return meta.status().WithContext(std::string(what) + " " + name);
  const kube::OwnerRef* owner = meta->ControllerRef();
  if (owner != nullptr && owner->uid == job.meta.uid) return Status::Ok();
  const std::string message =
      std::string(what) + " " + name + " exists but is not this job's (" +
      (owner == nullptr ? std::string("no controller")
                        : "controlled by " + owner->kind + " " + owner->name) +
      "): " + std::string(consequence) + ", and no pod is created until it is deleted";
  events_.Record(InvolvedJob(job), "Warning", std::string(reason), message);
  return FailedPreconditionError(message);
}

Status PlanExecutor::CreateInBatches(const CachedJob& job, const std::vector<nlohmann::json>& pods,
                                    std::vector<nlohmann::json>* created) {
  const std::string key = job.meta.Key();
  const size_t total = std::min<size_t>(pods.size(), kMaxCreatesPerPass);
  Status first_error;
  for (size_t start = 0, batch = kFirstCreateBatch; start < total && first_error.ok();
       start += batch, batch *= 2) {
    const size_t end = std::min(total, start + batch);
    std::vector<std::string> names;
    for (size_t i = start; i < end; ++i) names.push_back(PodName(pods[i]));
    expectations_.ExpectCreations(key, names);
    std::vector<std::future<StatusOr<nlohmann::json>>> calls;
    for (size_t i = start; i < end; ++i) {
      calls.push_back(std::async(std::launch::async, [this, &job, &pods, i] {
        return client_.Create(kube::resources::Pods(), job.meta.namespace_, pods[i]);
      }));
    }
    for (size_t i = 0; i < calls.size(); ++i) {
      StatusOr<nlohmann::json> r = calls[i].get();
      if (r.ok()) {
        created->push_back(std::move(*r));
        continue;
      }
      // This create will never be observed as ours: stop waiting for it.
      expectations_.CreationObserved(key, names[i]);
      if (first_error.ok()) first_error = r.status().WithContext("create pod " + names[i]);
    }
  }
  if (!created->empty()) {
    log::Info("created pods", {{"job", key}, {"count", std::to_string(created->size())}});
  }
  if (!first_error.ok() && !IsAlreadyExists(first_error)) {
    events_.Record(InvolvedJob(job), "Warning", "FailedCreate", first_error.message());
  }
  return first_error;
}

Status PlanExecutor::CreatePods(const CachedJob& job, const Plan& plan) {
  std::vector<nlohmann::json> created;
  return CreateInBatches(job, plan.pod_creates, &created);
}

std::optional<Status> PlanExecutor::CreatePlacedPods(const CachedJob& job, const Plan& plan) {
  StatusOr<GangPlacer::Grant> grant = placer_->PlaceForCreate(plan.pod_creates);
  if (!grant.ok()) {
    log::Info("gang created unplaced",
              {{"job", job.meta.Key()}, {"why", grant.status().message()}});
    return std::nullopt;
  }
  std::vector<nlohmann::json> pods = plan.pod_creates;
  for (nlohmann::json& pod : pods) {
    auto node = grant->node_of.find(PodName(pod));
    if (node == grant->node_of.end()) {  // not the gang that was placed: give it back
      (void)placer_->FinishCreate(grant->gang_key, {}, false);
      return std::nullopt;
    }
    pod["spec"]["nodeName"] = node->second;
  }
  std::vector<nlohmann::json> created;
  const Status first_error = CreateInBatches(job, pods, &created);
  const bool whole = first_error.ok() && created.size() == pods.size();
  Status finished = placer_->FinishCreate(grant->gang_key, created, whole);
  if (whole && finished.ok()) return Status::Ok();
  // All or nothing: no part of the gang stays bound.
  DeleteCreated(job, created);
  if (!first_error.ok()) return first_error;
  if (!finished.ok()) return finished.WithContext("gang created placed, undone");
  return AbortedError("gang created placed only in part, undone");
}

void PlanExecutor::DeleteCreated(const CachedJob& job, const std::vector<nlohmann::json>& created) {
  for (const nlohmann::json& pod : created) {
    const std::string name = PodName(pod);
    const Status deleted = DeletePod(job, name, pod["metadata"].value("uid", ""), std::nullopt);
    if (deleted.ok()) continue;
    // The next passes see a partial gang of the current attempt: unplaced creates fill it and
    // the scheduler undoes its bound members (a leftover, gangs.h), so it is still placed whole.
    log::Error("cannot delete a pod of a gang created placed",
               {{"pod", job.meta.namespace_ + "/" + name}, {"error", deleted.ToString()}});
  }
  events_.Record(InvolvedJob(job), "Warning", "CreatePlacedUndone",
                 "deleted the " + std::to_string(created.size()) +
                     " pods created placed so no partial gang holds capacity; placed again");
}

Status PlanExecutor::DeletePods(const CachedJob& job, const Plan& plan) {
  const size_t total =
      std::min<size_t>(plan.pod_deletes.size(), static_cast<size_t>(kMaxDeletesPerPass));
  Status first_error;
  for (size_t start = 0; start < total && first_error.ok(); start += kDeleteBatch) {
    const size_t end = std::min(total, start + kDeleteBatch);
    std::vector<std::future<Status>> calls;
    for (size_t i = start; i < end; ++i) {
      calls.push_back(std::async(std::launch::async, [this, &job, &plan, i] {
        const PodDeletion& d = plan.pod_deletes[i];
        return DeletePod(job, d.name, d.uid, d.grace_period_seconds);
      }));
    }
    // Every call is waited for (the futures' threads use `this`), then the first error kept.
    for (size_t i = 0; i < calls.size(); ++i) {
      const Status deleted = calls[i].get();
      if (!deleted.ok() && first_error.ok()) {
        first_error = deleted.WithContext("delete pod " + plan.pod_deletes[start + i].name);
      }
    }
  }
  return first_error;
}

Status PlanExecutor::DeletePod(const CachedJob& job, const std::string& name,
                               const std::string& uid,
                               std::optional<int64_t> grace_period_seconds) {
  const std::string key = job.meta.Key();
  expectations_.ExpectDeletions(key, {uid});
  kube::DeleteOptions opts;
  opts.precondition_uid = uid;
  opts.propagation_policy = "Background";
  opts.grace_period_seconds = grace_period_seconds;
  StatusOr<nlohmann::json> r =
      client_.Delete(kube::resources::Pods(), job.meta.namespace_, name, opts);
  if (r.ok()) return Status::Ok();
  expectations_.DeletionObserved(key, uid);
  if (IsNotFound(r.status()) || kube::IsConflict(r.status())) return Status::Ok();  // already gone
  return r.status();
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
