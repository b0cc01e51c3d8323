#pragma once
// The in-place steps of ComputePlan (docs/failures.md "In place"), pure like the rest of it:
//   PlanInPlaceRecord   - the launchers restarted the gang in place (node 0's rendezvous server
//                         counts it, Observed::launchers reports it): record it once in
//                         status.restarts.inPlace (failures also in restarts.failures),
//                         status.rendezvous, lastRestart {mode InPlace}, an event and
//                         lockstep_restarts_total{mode="InPlace"}. status.attempt does not change:
//                         the pods stay, and their lockstep.dev/attempt label with it;
//   PlanRestartRequest  - a new lockstep.dev/restart-request value: Restart through the
//                         launchers (InPlace, healthy gang) or a Recreate restart; a pending
//                         in-place request completes when a later round runs, or falls back to
//                         Recreate after failurePolicy.inPlaceTimeoutSeconds;
//   PlanLauncherPoll    - ask node 0's launcher for its Status about every 10 s while the gang
//                         runs, in every restart mode: the answer carries the trainers' progress
//                         too (2 s while an in-place request is pending).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/plan_pass.h"
#include "operator/kube/objects.h"
#include "protocol/failure_reason.h"

namespace lockstep::controller {

inline constexpr std::chrono::seconds kLauncherPollInterval{10};
inline constexpr std::chrono::seconds kLauncherPendingPollInterval{2};

// The current attempt's node-rank-0 pod (it hosts the rendezvous server), if it exists.
const kube::Pod* RendezvousPod(const api::TrainingJob& job, const std::vector<kube::Pod>& pods);

// The launchers' failure reason as a CamelCase lastRestart reason.
std::string InPlaceReason(protocol::FailureReason launcher_reason);

void PlanInPlaceRecord(Pass& p);
// The same from the finished pods' termination messages (restartCount, requestedRestarts): the
// launchers are gone once the job succeeded, and a restart shortly before the end may have
// fallen between two polls.
void PlanInPlaceRecordFromPods(Pass& p);

// True when it decided a Recreate restart (the pass ends there).
bool PlanRestartRequest(Pass& p);

void PlanLauncherPoll(Pass& p);

}  // namespace lockstep::controller
