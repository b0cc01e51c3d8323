#pragma once
// The timers of runPolicy: activeDeadlineSeconds (measured from status.startTime, which a
// resume resets, so time spent suspended does not count), ttlSecondsAfterFinished (from
// status.completionTime) and startupTimeoutSeconds (from the StartupFailing condition's
// lastTransitionTime: how long a pod of the attempt has been failing to start, startup_policy.h).
// Each is read from the status, never from memory, so an operator restart keeps every timer.
// Each returns nullopt when the timer does not apply.

#include <chrono>
#include <optional>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::controller {

struct TimerCheck {
  bool expired = false;
  std::chrono::seconds remaining{0};  // until expiry, when not expired
};

std::optional<TimerCheck> CheckActiveDeadline(const api::TrainingJob& job, api::Time now);
std::optional<TimerCheck> CheckTtlAfterFinished(const api::TrainingJob& job, api::Time now);
// `conditions`: the status the pass is writing (a StartupFailing set this pass starts now).
// nullopt while StartupFailing is not True.
std::optional<TimerCheck> CheckStartupTimeout(const api::RunPolicy& run_policy,
                                              const std::vector<api::Condition>& conditions,
                                              api::Time now);

}  // namespace lockstep::controller
