#pragma once
// The Scheduled condition's text: "placed 8 pods on 2 nodes in rack block-0-rack-1" for a placed
// gang, and the reason and message of a waiting one (from explain.h, with the parts that change
// every cycle, such as the seconds waited, left out so the condition is only rewritten when the
// answer changes). Pure.

#include <string>

#include "operator/scheduler/cycle/condition_writer.h"
#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/placement.h"
#include "operator/scheduler/queue.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

inline constexpr std::string_view kReasonHeldForOlderGang = "CapacityHeldForOlderGang";

// Domains are named by the gang's finest topology key (or rack, then block, when it names none)
// that the chosen nodes carry.
std::string PlacedMessage(const Snapshot& snapshot, const GangRequest& gang,
                          const Placement& placement);

ScheduledCondition WaitingCondition(const GangDecision& decision);

}  // namespace lockstep::scheduler
