#pragma once
// Elastic capacity, the Kubernetes side: which elastic jobs need a status.capacity answer, and
// the answer computed from a job's pods and the cycle's snapshot (the pure search is
// ../capacity.h). The controller reads status.capacity.feasibleReplicas to restart a job that
// cannot get its gang at a size that fits (>= minReplicas), or to grow one back toward
// spec.replicas. Pure, thread-safe.

#include <cstdint>
#include <optional>
#include <vector>

#include "operator/api/types.h"
#include "operator/scheduler/cycle/cluster_objects.h"
#include "operator/scheduler/cycle/gangs.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

enum class CapacityNeed {
  kNone,
  kGangDoesNotFit,  // the current gang is complete and pending, and was not placed this cycle
  kGrowBack,        // running with fewer workers than spec.replicas
};

// For an elastic job only: kGangDoesNotFit when `gang_waiting`; else kGrowBack when the job is
// Running with 0 < status.replicas < spec.replicas; else kNone. Suspended or deleted jobs: kNone.
CapacityNeed NeedsCapacity(const JobInfo& job, bool gang_waiting);

// The largest worker count n in [spec.elastic.minReplicas, spec.replicas] such that n workers plus
// every other role's pods fit `snapshot` now, counting `job_pods` (the non-terminal pods the job
// controls, of any attempt: a restart would replace them) as gone; 0 when not even minReplicas
// fit. What one pod of each role requests is read from `job_pods` (the current attempt's first,
// others when it has none); nullopt when some role has no pod to read it from.
std::optional<int32_t> ComputeCapacity(const Snapshot& snapshot, const JobInfo& job,
                                       const std::vector<PodPtr>& job_pods, api::Time now);

}  // namespace lockstep::scheduler
