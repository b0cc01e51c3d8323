#include "operator/controller/inplace_policy.h"

#include <algorithm>
#include <limits>

namespace lockstep::controller {

int32_t AddToCount(int32_t count, int64_t add) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  // `add` clamped first, so the int64 sum cannot overflow whatever the caller passes.
  const int64_t sum = int64_t{count} + std::clamp<int64_t>(add, -2 * kMax, 2 * kMax);
  return static_cast<int32_t>(std::clamp<int64_t>(sum, 0, kMax));
}

int32_t FailureRestartsLeft(const api::TrainingJob& job, int32_t unrecorded) {
  const int64_t left = int64_t{job.spec.failure_policy.max_restarts} -
                       job.status.restarts.failures - std::max(0, unrecorded);
  return static_cast<int32_t>(std::max<int64_t>(0, left));
}

int32_t LauncherRestartBudget(const api::TrainingJob& job) {
  if (job.spec.failure_policy.restart_mode != api::RestartMode::kInPlace) return 0;
  return FailureRestartsLeft(job, 0);
}

int32_t RecordedInPlaceFailures(const api::TrainingJobStatus& status) {
  if (!status.rendezvous || status.rendezvous->attempt != status.attempt) return 0;
  return status.rendezvous->failure_restarts;
}

int32_t UnrecordedInPlaceFailures(const api::TrainingJobStatus& status, int32_t reported) {
  return std::max(0, reported - RecordedInPlaceFailures(status));
}

InPlaceRecord RecordLauncherTotals(const api::TrainingJobStatus& status, int32_t failures,
                                   int32_t requested, std::optional<int32_t> round) {
  // The rendezvous server's counters start again with every attempt (a new node-0 pod).
  api::RendezvousStatus before{status.attempt, 0, 0, 0};
  if (status.rendezvous && status.rendezvous->attempt == status.attempt) {
    before = *status.rendezvous;
  }
  InPlaceRecord r;
  r.new_failures = std::max(0, failures - before.failure_restarts);
  r.new_requested = std::max(0, requested - before.requested_restarts);
  r.rendezvous = api::RendezvousStatus{status.attempt, round.value_or(before.round),
                                       std::max(failures, before.failure_restarts),
                                       std::max(requested, before.requested_restarts)};
  return r;
}

void CountInPlaceRestarts(api::RestartCounts& counts, int32_t failures, int32_t requested) {
  counts.in_place = AddToCount(counts.in_place, int64_t{failures} + requested);
  counts.failures = AddToCount(counts.failures, failures);
}

void CountFailureRestart(api::RestartCounts& counts, int32_t unrecorded, bool counts_failure) {
  if (counts_failure) counts.failures = AddToCount(counts.failures, int64_t{1} + unrecorded);
  counts.in_place = AddToCount(counts.in_place, unrecorded);
}

}  // namespace lockstep::controller
