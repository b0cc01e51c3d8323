#pragma once
// The operator's side of Kueue's contract for one job, as a pure decision (docs/queues.md):
// from the job, what the caches hold of its Workload and the state of its pods, whether its pods
// may run (and with which flavors' node labels and tolerations), what the TrainingJob's
// `Admitted` condition says, and which writes to the Workload this pass makes. It mirrors what
// Kueue's own job reconciler does for the jobs it knows (jobframework.ReconcileGenericJob):
//
//  1. Finished job: the Workload gets Finished=True (Succeeded/Failed) so Kueue frees its quota.
//  2. No Workload yet: one is created, once the job has no pod left (a pod running unadmitted
//     would use quota nobody accounted for). Extra Workloads owned by the job are deleted.
//  3. A Workload whose PodSets no longer match the job (names, counts, container requests): the
//     job's pods are stopped, then the Workload is deleted and a new one created.
//  4. spec.active follows spec.runPolicy.suspend (a suspended job gives its quota back).
//  5. Evicted=True (preemption, quota reclaim, PodsReady timeout, deactivation): the pods are
//     stopped gracefully; once none is left, the admission is cleared (QuotaReserved=False,
//     Admitted=False, Requeued) and Kueue queues the Workload again.
//  6. Admitted=True: the pods may run, with the admitted flavors' node labels and tolerations.
//  7. Otherwise the job is held; Kueue's own words (QuotaReserved=False's message: quota, queue,
//     flavors) say why.
// And PodsReady, Kueue's signal for waitForPodsReady: True once every pod is ready (Started, or
// Recovered after a failure), False while it is not (WaitForStart, WaitForRecovery).
//
// Nothing is decided before the Workload cache synced: creating a Workload a cold cache does not
// show would make a second one. Thread-compatible; no I/O.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/children.h"
#include "operator/api/types.h"
#include "operator/kueue/workload_view.h"

namespace lockstep::kueue {

// What the caches hold for one job (the controller fills it each pass).
struct KueueObservation {
  bool synced = false;                  // the Workload and ResourceFlavor caches synced
  std::vector<WorkloadView> workloads;  // those whose controller owner is the job
  std::map<std::string, Flavor> flavors;
  // The value of PriorityClassOf(job) (0 when it names none); unset with `priority_error`
  // when the class is not found.
  std::optional<int32_t> priority = 0;
  std::string priority_error;
  // The other TrainingJobs' Workloads in the same namespace (the LocalQueue's other jobs among
  // them), for the job's place in its queue (QueuePosition).
  std::vector<WorkloadView> neighbours;
};

// Where a pending Workload stands among the TrainingJobs waiting in its LocalQueue, in Kueue's
// order (higher priority first, then older first): {place, of}, 1-based; nullopt when it is not
// waiting (admitted, inactive, finished). Only TrainingJobs are counted: Workloads of other
// kinds in the same queue are not the operator's to see (Kueue's visibility API would be).
std::optional<std::pair<int, int>> QueuePosition(const WorkloadView& mine,
                                                 const std::vector<WorkloadView>& neighbours);

// What the controller knows of the job this pass.
struct JobFacts {
  int32_t pods_existing = 0;  // pods of any attempt not yet gone, terminating ones included
  bool pods_ready = false;    // every desired pod of the attempt is ready or succeeded
  bool suspended = false;     // spec.runPolicy.suspend
  struct Finished {
    bool succeeded = false;
    std::string message;
  };
  std::optional<Finished> finished;
};

struct WorkloadWrite {
  enum class Kind { kCreate, kDelete, kPatchSpec, kPatchStatus };
  Kind kind = Kind::kCreate;
  std::string name;
  std::string uid;      // kDelete: a precondition
  nlohmann::json body;  // kCreate: the object; kPatch*: a JSON merge patch with resourceVersion
};

struct Decision {
  // False: no pod of the job may run now; its pods are deleted (with their grace) and none is
  // created.
  bool run = false;
  std::map<std::string, api::RolePlacement> placements;  // by role, when `run`
  // The TrainingJob's Admitted condition (and, while held, its state's reason and message).
  bool admitted = false;
  std::string reason;
  std::string message;
  std::string workload;  // the Workload's name, when there is one
  std::vector<WorkloadWrite> writes;
};

// `now`: RFC 3339, for the lastTransitionTime of conditions this pass changes.
Decision Decide(const api::TrainingJob& job, const KueueObservation& observed,
                const JobFacts& facts, const std::string& now);

// The PodsReady condition the Workload should carry (Kueue's generatePodsReadyCondition):
// {status, reason}.
std::pair<std::string, std::string> PodsReadyFor(const WorkloadView& workload, bool pods_ready);

// Whether the Workload's PodSets are those of the job: names, counts and each container's
// resources, in order.
bool MatchesJob(const WorkloadView& workload, const api::TrainingJob& job);

}  // namespace lockstep::kueue
