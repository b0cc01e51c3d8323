#include "operator/controller/timers.h"

namespace lockstep::controller {
namespace {

TimerCheck Check(api::Time start, std::chrono::seconds limit, api::Time now) {
  const api::Time due = start + limit;
  if (now >= due) return {true, std::chrono::seconds(0)};
  // Round up so the requeue lands at or after the expiry, never just before it.
  auto left = std::chrono::ceil<std::chrono::seconds>(due - now);
  return {false, left};
}

}  // namespace

std::optional<TimerCheck> CheckActiveDeadline(const api::TrainingJob& job, api::Time now) {
  const auto& deadline = job.spec.run_policy.active_deadline_seconds;
  if (!deadline || !job.status.start_time) return std::nullopt;
  return Check(*job.status.start_time, std::chrono::seconds(*deadline), now);
}

std::optional<TimerCheck> CheckTtlAfterFinished(const api::TrainingJob& job, api::Time now) {
  const auto& ttl = job.spec.run_policy.ttl_seconds_after_finished;
  if (!ttl || !job.status.completion_time) return std::nullopt;
  return Check(*job.status.completion_time, std::chrono::seconds(*ttl), now);
}

}  // namespace lockstep::controller
