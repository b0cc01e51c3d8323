#pragma once
// What a failure of the current attempt means: detect it in the pods and nodes the caches show,
// classify it (the job's own failure, or a disruption it did not cause) and decide between a gang
// restart and failing the job. Pure; table-tested in tests/unit/controller/failure_policy_test.cc.
//
// Detection, in order (the first finding explains the restart):
//   1. a lost node under any unfinished pod of the attempt (NodeHealthMonitor's verdict): a
//      disruption, with the verdict's reason (NodeLeaseExpired, NodeNotReady, ...);
//   2. a pod with DisruptionTarget=True, or Failed with reason Evicted/Preempting/Shutdown...: a
//      disruption, reason PodDisrupted;
//   3. a member of the gang that ran whole, deleted by someone other than the operator and gone
//      before a pass saw a reason above on it (GoneMembers): a disruption, reason PodDeleted. The
//      gang cannot go on without it, and refilling the attempt under the same number would leave
//      a half-bound gang for the scheduler to undo. It also explains the others' exit 75;
//   4. a pod Failed with a container exit code: the job's own failure. Launcher exit 75 (peer
//      lost) is never the cause when another pod shows one, so the culprit is the rank that
//      failed first. spec.failurePolicy.rules decide (first match wins); the default, when no
//      rule matches, is RestartJob for every exit code (1-255: application errors, signals,
//      OOMKilled and the launcher's 76 hang, 77 refused, 78 join timeout, 79 launcher error).
//   5. apart from DecideFailure, since it needs the pass's time (StartupTimeoutFailure): a pod
//      of the attempt failing to start (StartupFailing, startup_policy.h) for
//      spec.runPolicy.startupTimeoutSeconds: the job's own failure, with the container's waiting
//      reason (ImagePullBackOff, ...) and the condition's message. Only when 1-4 found nothing.
// Budgets: failures are bounded by maxRestarts (RestartJobAndIgnoreMaxRestarts skips the bound),
// disruptions by maxDisruptions; neither consumes the other.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/failure_rules.h"
#include "operator/api/types.h"
#include "operator/controller/node_health.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

enum class FailureAction {
  kNone,     // nothing failed
  kRestart,  // restart the gang as the next attempt
  kFailJob,  // the job ends Failed
};

enum class FailureKind { kFailure, kDisruption };

struct FailureDecision {
  FailureAction action = FailureAction::kNone;
  FailureKind kind = FailureKind::kFailure;
  std::string reason;   // CamelCase, for lastRestart, the condition and the event
  std::string message;  // names the node or the pod, container, exit code or signal
  bool counts = true;   // false: RestartJobAndIgnoreMaxRestarts
  std::vector<std::string> lost_nodes;  // sorted; the next placements exclude them
  // In-place restarts the failed pod's launcher already made (its termination message's
  // restartCount): they were the job's failures too, so they count against maxRestarts.
  int32_t in_place_restarts = 0;
  std::optional<api::Time> failed_at;  // when known: detection delay = now - failed_at
  // The culprit is a launcher that stopped because another node failed (exit 75) while a pod of
  // the attempt is still active: the pod that really failed is likely about to report. The plan
  // waits for it a short while (kCulpritWait) instead of judging by the 75.
  bool awaiting_culprit = false;
};

inline constexpr std::chrono::seconds kCulpritWait{15};

// `pods`: the pods of the current attempt only. `lost_nodes`: Observed::lost_nodes. `gone`:
// GoneMembers' answer; steps 1 and 2 read these last states as they read `pods`.
FailureDecision DecideFailure(const api::TrainingJob& job, const std::vector<kube::Pod>& pods,
                              const std::map<std::string, NodeVerdict>& lost_nodes,
                              const std::vector<kube::Pod>& gone = {});

// The members of the current attempt (`gone_pods`: Observed::gone_pods of that attempt) that
// went while its gang ran whole: the status says Running, or every member left in `pods` is
// Running and every missing one was when it went, `desired` members in all. One per member name
// (its newest last state), bound and unfinished when it went, and only names no pod in `pods`
// holds. Empty when the gang never ran whole (a bind the scheduler undid, a gang created placed
// and undone: those are refilled under the same attempt, as before).
std::vector<kube::Pod> GoneMembers(const api::TrainingJob& job, int32_t desired,
                                   const std::vector<kube::Pod>& pods,
                                   const std::vector<kube::Pod>& gone_pods);

// Step 5: `startup_failing` (True) has lasted spec.runPolicy.startupTimeoutSeconds. A restart
// (kFailure, counted against maxRestarts; failed_at: when the timeout expired), or kFailJob with
// MaxRestartsExceeded when the budget is used up. failurePolicy.rules match exit codes, which a
// container that never started does not have: none applies.
FailureDecision StartupTimeoutFailure(const api::TrainingJob& job,
                                      const api::Condition& startup_failing);

using api::MatchFailureRule;  // operator/api/failure_rules.h

// True when the pod was disrupted (evicted, preempted, deleted by the taint manager, node
// shutdown, or deleted by anyone while its launcher ran: the launcher's termination reason
// "terminated" on a pod being deleted) rather than failed by its own containers.
bool IsDisrupted(const kube::Pod& pod);

}  // namespace lockstep::controller
