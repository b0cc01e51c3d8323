#pragma once
// The one rule by which status.capacity is current: the scheduler writes it (ConditionWriter::
// WriteCapacity) and the controller's elastic policy reads it (FreshFeasible); both sides must
// agree, or a figure one side thinks current the other ignores and nobody writes it again.

#include <optional>

#include "operator/api/types.h"

namespace lockstep::api {

// True when `capacity` was observed in the current attempt: at or after `attempt_start`
// (status.lastRestart.time; absent before the first restart, when every figure is current).
inline bool ObservedInAttempt(const Capacity& capacity, const std::optional<Time>& attempt_start) {
  return !attempt_start || capacity.observed_time >= *attempt_start;
}

}  // namespace lockstep::api
