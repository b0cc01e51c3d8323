#pragma once
// Where status.goodput's late recoveries (goodput.h LateRecovery) come from: the evidence of a
// recovery the job's status never showed, because the gang's pods stayed Running through it (an
// in-place restart, a spare promotion) or until its failure was detected (a Recreate restart,
// restart_plan.cc: failed_at to the decision). Pure.
//
//   LauncherRecovery - node 0's launcher's Status answer -> the recovery that made its current
//                      round: from the failure that ended the round before
//                      (RoundFailure::failed_unix_ms: a lost member's close or its last bytes,
//                      else the abort) or from the operator's restart request, to the current
//                      round's start (running_since_unix_ms). Only once that round runs, and
//                      only while the stored goodput was last folded before it began: the one
//                      pass that charges it moves goodput.updatedAt past it, so it is charged
//                      once, whenever the operator's poll comes.
//
// The answer is worker-0's, so the tenant's: ControlStatus::Check bounds its times (before 2200),
// an answer whose round started before its failure gives none, and NextGoodput clamps the rest
// to the time the job's status itself charged as productive. A launcher can so misstate only its
// own job's goodput, and only within its Running time.

#include <optional>
#include <string>
#include <string_view>

#include "operator/api/types.h"
#include "operator/controller/goodput.h"
#include "protocol/messages.h"

namespace lockstep::controller {

// The name recoveryByCause gives a hot spare's promotion (the round a spare was promoted for).
inline constexpr std::string_view kSparePromotedCause = "SparePromoted";

// `stored`: the status as read (its goodput.updatedAt and restartRequest). The cause: a spare
// promotion, else the failure's in-place restart reason (inplace_plan.h InPlaceReason), or
// RestartRequested.
std::optional<LateRecovery> LauncherRecovery(const protocol::ControlStatus& answer,
                                             const api::TrainingJobStatus& stored,
                                             api::Time now);

}  // namespace lockstep::controller
