#pragma once
// status.progress: the trainers' progress as node 0's launcher reports it in its Status answer
// (protocol ControlStatus::progress, read from LOCKSTEP_PROGRESS_FILE; docs/api.md
// "status.progress").
//
//   NextProgress         - pure: the latest report, the progress last written and the clock ->
//                          the status.progress to write (the one written when nothing is new or
//                          it was written less than kProgressWriteInterval ago)
//   PlanTrainingProgress - the plan step: folds it into the pass's status, so progress costs no
//                          status write of its own (the pass writes once, when anything changed)
//   PlanFinalProgress    - the pass that records success: node 0's launcher left its trainers'
//                          last report in its termination message; written whatever the interval,
//                          so a finished job shows its final step
//   ProgressRatio        - step / totalSteps for lockstep_job_progress_ratio
//
// The operator polls every running job's launchers every kLauncherPollInterval (inplace_plan.h),
// so a pass sees a report at most that old.

#include <chrono>
#include <optional>

#include "operator/api/types.h"
#include "protocol/messages.h"

namespace lockstep::controller {

struct Pass;

// At most one status.progress change per job this often: a trainer may report every step, and
// every write is an apiserver write and a watch event to every watcher of the job.
inline constexpr std::chrono::seconds kProgressWriteInterval{10};

// `reported`: the launchers' latest report, if the last Status request was answered and had one.
// `written`: status.progress as stored. A report equal to the one written changes nothing (so
// lastUpdate is when the progress last moved). etaSeconds comes from the step rate between
// `written` and now: absent without totalSteps, without a written step before this one, or when
// the step went back. `final`: the job's last report (written even within the interval).
std::optional<api::JobProgress> NextProgress(
    const std::optional<protocol::TrainingProgress>& reported,
    const std::optional<api::JobProgress>& written, api::Time now, bool final = false);

void PlanTrainingProgress(Pass& p);
void PlanFinalProgress(Pass& p);

// step / totalSteps, at most 1; nullopt without totalSteps.
std::optional<double> ProgressRatio(const api::JobProgress& progress);

}  // namespace lockstep::controller
