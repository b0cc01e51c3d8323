#pragma once
// The two timers of runPolicy: activeDeadlineSeconds (measured from status.startTime, which a
// resume resets, so time spent suspended does not count) and ttlSecondsAfterFinished (from
// status.completionTime). Each returns nullopt when the timer does not apply.

#include <chrono>
#include <optional>

#include "operator/api/types.h"

namespace lockstep::controller {

struct TimerCheck {
  bool expired = false;
  std::chrono::seconds remaining{0};  // until expiry, when not expired
};

std::optional<TimerCheck> CheckActiveDeadline(const api::TrainingJob& job, api::Time now);
std::optional<TimerCheck> CheckTtlAfterFinished(const api::TrainingJob& job, api::Time now);

}  // namespace lockstep::controller
