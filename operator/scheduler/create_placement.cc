#include "operator/scheduler/create_placement.h"

#include <algorithm>

#include "common/enum_names.h"

namespace lockstep::scheduler {

CreatePlacementDecision DecideCreatePlacement(const Snapshot& snapshot, const GangRequest& gang,
                                              const std::vector<PendingGang>& waiting,
                                              std::chrono::steady_clock::time_point now,
                                              const CycleOptions& options) {
  CreatePlacementDecision decision;
  for (const PendingGang& w : waiting) {
    if (w.gang->priority >= gang.priority) {
      decision.outcome = CreatePlacementOutcome::kQueuedAhead;
      decision.reason = "gang " + w.gang->job_key + " (priority " +
                        std::to_string(w.gang->priority) + ") waits ahead of it";
      return decision;
    }
  }
  // The binding path's decision with this gang in the queue: every waiting gang is of lower
  // priority, so this one is walked first, but the walk still applies held capacity and
  // reservations exactly as a cycle would.
  std::vector<PendingGang> pending = waiting;
  pending.push_back({&gang, now});
  CyclePlan plan = PlanCycle(snapshot, std::move(pending), now, options);
  for (GangDecision& d : plan.decisions) {
    if (d.gang != &gang) continue;
    if (d.outcome == Outcome::kPlaced) {
      decision.outcome = CreatePlacementOutcome::kPlace;
      decision.placement = std::move(d.placement);
    } else {
      decision.outcome = CreatePlacementOutcome::kDoesNotFit;
      decision.reason = d.placement.message.empty() ? "does not fit now" : d.placement.message;
    }
    return decision;
  }
  decision.reason = "not in the cycle's decisions";
  return decision;
}

bool PlacedRequestHolds(const PodRequest& placed, const PodRequest& stored) {
  for (const auto& [name, amount] : stored.requests.entries()) {
    if (amount > placed.requests.Get(name)) return false;
  }
  if (stored.node_selector != placed.node_selector) return false;
  if (stored.required_affinity != placed.required_affinity) return false;
  for (const Toleration& t : placed.tolerations) {
    if (std::find(stored.tolerations.begin(), stored.tolerations.end(), t) ==
        stored.tolerations.end()) {
      return false;
    }
  }
  return true;
}

std::string_view CreatePlacementOutcomeName(CreatePlacementOutcome outcome) {
  static constexpr NameTable<CreatePlacementOutcome, 3> kNames = {
      {{CreatePlacementOutcome::kPlace, "place"},
       {CreatePlacementOutcome::kQueuedAhead, "queued_ahead"},
       {CreatePlacementOutcome::kDoesNotFit, "does_not_fit"}}};
  return NameOf(kNames, outcome, "unknown");
}

}  // namespace lockstep::scheduler
