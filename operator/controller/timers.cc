#include "operator/controller/timers.h"

#include "operator/api/conditions.h"

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

std::optional<TimerCheck> CheckStartupTimeout(const api::RunPolicy& run_policy,
                                              const std::vector<api::Condition>& conditions,
                                              api::Time now) {
  const api::Condition* failing = api::FindCondition(conditions, api::kConditionStartupFailing);
  if (failing == nullptr || failing->status != api::ConditionStatus::kTrue) return std::nullopt;
  return Check(failing->last_transition_time,
               std::chrono::seconds(run_policy.startup_timeout_seconds), now);
}

}  // namespace lockstep::controller
