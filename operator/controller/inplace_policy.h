#pragma once
// In-place restart accounting (docs/failures.md "In place"), as one pure policy. The launchers
// of an attempt restart a failed gang in place within what is left of failurePolicy.maxRestarts,
// and each such restart is one of the job's failures. The operator hears of them twice: from node
// 0's rendezvous server while it runs (recorded in status.rendezvous and status.restarts), and
// from a failed or finished pod's termination message (restartCount, the launcher's own total for
// the attempt). Every count is charged once, and the budget is computed in one function
// (FailureRestartsLeft). The plan steps call this file; it calls none of them (no plan step, no
// pass, no kube type here).
//
// Table-tested in tests/unit/controller/inplace_policy_test.cc.

#include <cstdint>
#include <optional>

#include "operator/api/types.h"

namespace lockstep::controller {

// count + add for status.restarts and status.spares counters, held in [0, INT32_MAX] (the CRD's
// range) instead of wrapping: the status may already hold INT32_MAX, and what launchers add comes
// from the wire (each report at most protocol::kMaxCounter, 2^24) or a termination message.
int32_t AddToCount(int32_t count, int64_t add);

// The failure restarts the job has left: failurePolicy.maxRestarts minus status.restarts.failures
// minus `unrecorded`, the launchers' in-place failure restarts that status does not hold yet.
// Never below 0. The one budget: LauncherRestartBudget and the failure policy both read it.
int32_t FailureRestartsLeft(const api::TrainingJob& job, int32_t unrecorded);

// LOCKSTEP_MAX_RESTARTS for the launchers of a new attempt's pods: what is left of the budget
// with restartMode InPlace; 0 with Recreate (the launchers exit, and the operator re-places).
int32_t LauncherRestartBudget(const api::TrainingJob& job);

// In-place failure restarts of the current attempt already in status.restarts.failures (as
// recorded from the rendezvous server in status.rendezvous).
int32_t RecordedInPlaceFailures(const api::TrainingJobStatus& status);

// Of a termination message's restartCount (the launcher's total for the current attempt), those
// status does not hold yet.
int32_t UnrecordedInPlaceFailures(const api::TrainingJobStatus& status, int32_t reported);

// What to record when the launchers of the current attempt report totals (from the rendezvous
// server, or the finished pods' termination messages).
struct InPlaceRecord {
  api::RendezvousStatus rendezvous;  // status.rendezvous after recording
  int32_t new_failures = 0;          // in-place restarts after failures status did not hold
  int32_t new_requested = 0;         // in-place restarts on request status did not hold
};
// `round`: the launchers' round now, when known (else the recorded one stays).
InPlaceRecord RecordLauncherTotals(const api::TrainingJobStatus& status, int32_t failures,
                                   int32_t requested, std::optional<int32_t> round);

// status.restarts after in-place restarts were recorded: every one counts in `in_place`, the
// failures also in `failures`.
void CountInPlaceRestarts(api::RestartCounts& counts, int32_t failures, int32_t requested);

// status.restarts after a Recreate restart caused by the job's own failure: the failure and the
// in-place restarts its launchers made that status did not hold (`unrecorded`). `counts`: false
// for a RestartJobAndIgnoreMaxRestarts rule, which charges no failure (its in-place restarts
// still count as in-place restarts).
void CountFailureRestart(api::RestartCounts& counts, int32_t unrecorded, bool counts_failure);

}  // namespace lockstep::controller
