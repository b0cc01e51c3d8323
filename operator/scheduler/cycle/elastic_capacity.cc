#include "operator/scheduler/cycle/elastic_capacity.h"

#include <string>

#include "operator/api/children.h"
#include "operator/scheduler/capacity.h"
#include "operator/scheduler/cycle/convert.h"

namespace lockstep::scheduler {
namespace {

bool HasRole(const kube::Pod& pod, std::string_view role) {
  auto it = pod.meta.labels.find(std::string(api::kLabelRole));
  return it != pod.meta.labels.end() && it->second == role;
}

// One pod of `role` to read its request from: the current attempt's if any, else any.
PodPtr RepresentativeOf(const JobInfo& job, const std::vector<PodPtr>& pods,
                        std::string_view role) {
  PodPtr fallback;
  for (const PodPtr& pod : pods) {
    if (!HasRole(*pod, role)) continue;
    if (PodAttempt(*pod) == job.status_attempt) return pod;
    if (fallback == nullptr) fallback = pod;
  }
  return fallback;
}

}  // namespace

CapacityNeed NeedsCapacity(const JobInfo& job, bool gang_waiting) {
  if (!job.spec.elastic || job.meta.deletion_timestamp || job.spec.run_policy.suspend) {
    return CapacityNeed::kNone;
  }
  if (gang_waiting) return CapacityNeed::kGangDoesNotFit;
  if (job.state == api::JobState::kRunning && job.status_replicas > 0 &&
      job.status_replicas < job.spec.replicas) {
    return CapacityNeed::kGrowBack;
  }
  return CapacityNeed::kNone;
}

std::optional<int32_t> ComputeCapacity(const Snapshot& snapshot, const JobInfo& job,
                                       const std::vector<PodPtr>& job_pods, api::Time now) {
  if (!job.spec.elastic) return std::nullopt;
  // The gang's shape: one worker (FeasibleReplicas sizes the role), then each extra role at its
  // full count, in gang order so RequestFor groups them into roles.
  std::vector<PodPtr> shape;
  PodPtr worker = RepresentativeOf(job, job_pods, api::kWorkerRole);
  if (worker == nullptr) return std::nullopt;
  shape.push_back(worker);
  for (const api::Role& role : job.spec.roles) {
    if (role.replicas <= 0) continue;
    PodPtr pod = RepresentativeOf(job, job_pods, role.name);
    if (pod == nullptr) return std::nullopt;
    shape.insert(shape.end(), static_cast<size_t>(role.replicas), pod);
  }
  GangRequest gang = RequestFor(job, shape, /*priority=*/0, now);

  // The job's own bound pods would be replaced by the gang asked about: their capacity is free.
  Snapshot free = snapshot;
  for (const PodPtr& pod : job_pods) {
    if (!HoldsResources(*pod)) continue;
    if (std::optional<NodeIndex> n = free.Find(pod->node_name)) {
      free.Release(*n, RequestsFromMilli(pod->requests));
    }
  }
  return FeasibleReplicas(free, std::move(gang), /*worker_role=*/0, job.spec.elastic->min_replicas,
                          job.spec.replicas);
}

}  // namespace lockstep::scheduler
