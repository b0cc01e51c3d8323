#pragma once
// The gang-restart steps of ComputePlan (see plan.h for the pass order):
//   PlanStaleDeletes - delete what is left of older attempts; grace 0 for pods on lost nodes,
//                      whose kubelet will never confirm, so nothing stays Terminating; a pod the
//                      taint-eviction controller deletes (by name) is left to it for up to 10 s,
//                      so it cannot take the successor of the same name for it;
//   PlanRestart     - start attempt N+1: counters, backoff, lastRestart, excluded nodes,
//                     Restarting condition, the event, and the deletes of attempt N's pods;
//   PlanRestartWait - the new attempt's pods wait until the old ones are gone (same names)
//                     and the backoff has passed;
//   PlanRecovered   - the new gang runs: Restarting=False, recovery time, and after
//                     backoff.resetAfterSeconds of healthy running the backoff streak resets.
// Restart mode: the operator's own restarts are Recreate (a pod or node was lost, the size
// changes, or a requested in-place restart fell back). InPlace restarts of rank failures are made
// by the launchers of the attempt within what is left of maxRestarts (LOCKSTEP_MAX_RESTARTS);
// the operator records them while they run (inplace_plan.h) and, for those it missed, from the
// failed pod's termination message (failure_policy.h). How each is counted, and the budget, is
// the in-place policy's (inplace_policy.h).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "operator/controller/failure_policy.h"
#include "operator/controller/plan_pass.h"

namespace lockstep::controller {

// `stale`: older attempts' pods (pod_attempt.h SplitByAttempt). Returns how many still exist.
int32_t PlanStaleDeletes(Pass& p, const std::vector<kube::Pod>& stale);

struct RestartRequest {
  // kRequested: the lockstep.dev/restart-request annotation (inplace_plan.h); no budget, no
  // backoff, like a resize.
  enum class Kind { kFailure, kDisruption, kResize, kRequested };
  Kind kind = Kind::kFailure;
  std::string reason;
  std::string message;
  bool counts = true;             // false: RestartJobAndIgnoreMaxRestarts
  // Made by the launchers before the pod failed and not yet recorded in status.restarts.
  int32_t in_place_restarts = 0;
  std::vector<std::string> lost_nodes;
  std::optional<api::Time> failed_at;
  std::optional<int32_t> size;  // a resize: the new worker count
};

RestartRequest FromFailure(const FailureDecision& d);

// The wait before the pods of a restart caused by the job's own failure: initialSeconds doubled
// per consecutive failure restart, capped at maxSeconds. Disruptions and resizes do not wait.
std::chrono::seconds FailureBackoff(const api::Backoff& backoff, int32_t consecutive);

void PlanRestart(Pass& p, const RestartRequest& r, const std::vector<kube::Pod>& current);

// True while the current attempt's pods must not be created yet.
bool PlanRestartWait(Pass& p, int32_t stale_left);

void PlanRecovered(Pass& p);

// Pods on lost nodes among `plan->pod_deletes` are force-deleted (grace 0), and pods already
// Terminating on a lost node get the force delete too: whatever ends the pods (finish, suspend,
// restart), none may stay Terminating on a node that will never confirm it.
void ForceDeletesOnLostNodes(Pass& p);

// Drops exclusions whose cool-down is over; requeues for the next expiry.
void PruneExclusions(Pass& p);

}  // namespace lockstep::controller
