#pragma once
// The Kueue step of a plan pass (docs/queues.md), for a job Kueue manages: the facts of this
// pass (its pods, suspend, end) go to kueue::Decide (kueue/gate.h), whose Workload writes join
// the plan; the job's `Admitted` condition and its events are set from the decision. Whether the
// pods may run is the caller's to act on (plan.cc: held jobs are planned like suspended ones,
// in state Queued). Internal to the controller.

#include <optional>

#include "operator/controller/plan_pass.h"
#include "operator/kueue/gate.h"

namespace lockstep::controller {

// Nullopt for a job Kueue does not manage (Observed::kueue unset).
std::optional<kueue::Decision> PlanKueue(Pass& p);

}  // namespace lockstep::controller
