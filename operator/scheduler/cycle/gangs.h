#pragma once
// Phase 1 of the cycle: pending pods of this scheduler, grouped into gangs by (namespace,
// lockstep.dev/job-name, lockstep.dev/attempt) and turned into GangRequests. A gang is the pods of
// the job's CURRENT attempt (label == status.attempt): pods of an older attempt (being deleted in
// a restart) are ignored, never members; pods of a newer attempt than the cached status wait until
// the cache catches up. A gang is complete only when every pod its TrainingJob expects exists,
// unbound, exactly once per (role, index); anything else waits (a partial gang is never placed).
// A gang of the current attempt that is split, some members bound and the rest pending, with no
// bind of this scheduler in flight, is a leftover (a scheduler killed mid-bind, an undo whose
// delete failed): nothing would ever complete it, so it is reported for undoing.
// Pure, thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/objects.h"
#include "operator/scheduler/cycle/cluster_objects.h"
#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/preemption.h"

namespace lockstep::scheduler {

using PodPtr = std::shared_ptr<const kube::Pod>;
using JobPtr = std::shared_ptr<const JobInfo>;

struct CollectedGang {
  std::string key;  // "namespace/job/attempt": one attempt of one job
  JobPtr job;
  GangRequest request;
  std::vector<std::vector<PodPtr>> pods;  // parallel to request.roles, replica-index order
};

struct CollectOptions {
  std::string scheduler_name = "lockstep";
  std::string namespace_filter;  // empty: every namespace
};

struct CollectInputs {
  std::function<JobPtr(const std::string& job_key)> find_job;
  // Gangs already being bound (their pods are assumed, not pending).
  std::function<bool(const std::string& gang_key)> in_flight;
  // Wall-clock now: status.excludedNodes entries count until their `until`.
  api::Time now{};
  // PriorityClass name ("" = the global default) -> preemptionPolicy is Never. Unset: never so.
  // Asked with each pod's own class. A gang's priority is its pods' admitted spec.priority
  // (gangs.cc says why), so no class value is looked up here.
  std::function<bool(const std::string& class_name)> never_preempts;
};

// A partly bound gang nobody is binding (see above): its bound members, to be deleted.
struct LeftoverGang {
  std::string key;  // "namespace/job/attempt"
  JobPtr job;
  std::vector<PodPtr> bound;
};

struct GangCollection {
  std::vector<CollectedGang> complete;  // sorted by key
  std::vector<LeftoverGang> leftovers;  // also counted as incomplete
  int64_t incomplete = 0;               // gangs still missing pods, without their job, or of a
                                        // newer attempt than the cached status
  int64_t stale = 0;                    // groups of an older attempt: ignored
};

// A pod this scheduler must place: ours, unbound, not terminating, not finished.
bool IsPendingFor(const kube::Pod& pod, const CollectOptions& options);
// A pod of ours that is bound and holds its node (not terminating, not finished).
bool IsBoundFor(const kube::Pod& pod, const CollectOptions& options);

// The pod's lockstep.dev/attempt label; nullopt when absent or not a number.
std::optional<int32_t> PodAttempt(const kube::Pod& pod);

// Sorts a job's pods into gang order: workers, then the job's roles in spec order, then any other
// role by name; replica index within a role.
void SortGangOrder(const JobInfo& job, std::vector<PodPtr>& pods);

// The request for `pods` of `job` (in gang order; any subset, no completeness check): one Role
// per run of equal role labels, the job's topology, and the nodes excluded at `now`. When
// `by_role` is set it receives the pods parallel to the request's roles.
GangRequest RequestFor(const JobInfo& job, const std::vector<PodPtr>& pods, int32_t priority,
                       api::Time now, std::vector<std::vector<PodPtr>>* by_role = nullptr);

// `pods`: every pod of the cache but those this scheduler assumes (binds it made whose watch
// events have not arrived), so a gang of its own being bound never looks split.
GangCollection CollectGangs(const std::vector<PodPtr>& pods, const CollectInputs& inputs,
                            const CollectOptions& options = {});

// Running gangs, the candidates a preemptor may evict (preemption.h), parallel vectors.
struct RunningGangs {
  std::vector<RunningGang> gangs;         // job key, priority, start (newest pod), bound pods
  std::vector<JobPtr> jobs;               // the owning job
  std::vector<std::string> keys;          // "namespace/job/attempt"
  std::vector<std::vector<PodPtr>> pods;  // what evicting the gang deletes: every pod of it
};

// The gangs of the current attempt whose every expected pod is bound, alive and owned by the
// job, not in flight, of a job neither deleted nor suspended: only a whole gang is ever a
// candidate, never a gang already partly leaving (a terminating member) or partly pending.
RunningGangs CollectRunningGangs(const std::vector<PodPtr>& pods, const CollectInputs& inputs,
                                 const CollectOptions& options = {});

}  // namespace lockstep::scheduler
