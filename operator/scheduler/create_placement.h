#pragma once
// Placed at create (docs/scheduler-cycle.md, "Created placed"): whether a gang the controller is
// about to create may be created already placed (spec.nodeName set, one write per pod instead of a
// create and a bind), and where. The answer is the binding path's own decision for that gang at
// this moment, never a looser one:
//   - a complete gang already waiting in the binding path's queue with a priority higher than or
//     equal to this gang's is served first: the new gang falls back to the queue (conservative:
//     equal priority falls back even when this job is older, since the waiting gang was complete
//     first and the binding path would have placed it in the meantime);
//   - otherwise the decision is PlanCycle's (queue.h) over the waiting gangs plus this one, with
//     the capacity a preemptor holds: this gang, ahead of every waiting one, is placed exactly
//     where the next cycle would place it (feasibility, topology, excluded nodes, reservations);
//   - a gang that does not fit falls back; this path never preempts (the binding path may, on
//     its next cycle, once the pods exist).
// Pure, thread-safe.

#include <chrono>
#include <string>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/placement.h"
#include "operator/scheduler/queue.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

enum class CreatePlacementOutcome {
  kPlace,        // create the pods with placement.assignments' nodes
  kQueuedAhead,  // a waiting gang of higher or equal priority goes first: create unplaced
  kDoesNotFit,   // no placement now (or only on held/reserved capacity): create unplaced
};

struct CreatePlacementDecision {
  CreatePlacementOutcome outcome = CreatePlacementOutcome::kDoesNotFit;
  Placement placement;  // kPlace: the assignment
  std::string reason;   // why not, for logs and the fallback's event
};

// `snapshot`: bound and assumed pods as the next cycle would see them. `waiting`: the complete
// gangs pending in the binding path's queue now (not `gang`). `options`: the cycle's reservation
// and held capacity.
CreatePlacementDecision DecideCreatePlacement(const Snapshot& snapshot, const GangRequest& gang,
                                              const std::vector<PendingGang>& waiting,
                                              std::chrono::steady_clock::time_point now,
                                              const CycleOptions& options = {});

// Whether a pod placed from its template (`placed`) may stay where it was created, now that the
// apiserver stored it as `stored`: admission may have changed it (a mutating webhook, a
// LimitRange's default requests), and the binding path would have placed the stored pod. It
// holds when the stored pod asks for no more of any resource, selects and requires the same
// nodes, and tolerates at least what was placed (DefaultTolerationSeconds adds tolerations,
// which only loosens). Otherwise the placement may be wrong: the gang is undone.
bool PlacedRequestHolds(const PodRequest& placed, const PodRequest& stored);

std::string_view CreatePlacementOutcomeName(CreatePlacementOutcome outcome);

}  // namespace lockstep::scheduler
