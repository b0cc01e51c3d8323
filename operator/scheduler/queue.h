#pragma once
// Queue order and the per-cycle decision of which pending gangs to place: pure, thread-safe.
//
// Policy (stated in full in docs/scheduler.md):
//  1. Order: priority descending, then creation time ascending, then job key.
//  2. Walk the queue; place every gang that fits, assuming each placement before the next gang,
//     so a cycle may place several gangs and they never overlap (backfill: a gang that does not
//     fit does not stop smaller ones behind it).
//  3. Reservation: the first gang in order that does not fit and has waited at least
//     `reserve_after` gets a would-be placement on the cluster as if empty (preferring nodes free
//     now). That capacity is held for the rest of the cycle: later gangs only see what the
//     holder does not need. Decisions are recomputed every cycle; nothing is stored here.
//  4. Held capacity (preemption, preemption.h): the caller may name a gang that evicted others
//     and the pods it would place where they were. When the walk reaches that gang and it does
//     not fit yet (the victims are still terminating), it becomes the reservation holder at once
//     (no `reserve_after` wait) with exactly those pods as its would-be placement, so no later
//     gang starts in the freed capacity ahead of it. The caller bounds how long it names it.

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/placement.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

struct PendingGang {
  const GangRequest* gang = nullptr;                   // not owned; outlives the PlanCycle call
  std::chrono::steady_clock::time_point queued_since;  // when it entered the queue
};

// Priority descending, then creation time ascending, then job key.
bool QueueBefore(const GangRequest& a, const GangRequest& b);

enum class Outcome {
  kPlaced,                // placement.assignments is ready to bind
  kWaiting,               // does not fit; placement.message says why
  kReserved,              // does not fit; capacity is held for it (reserved_nodes)
  kBlockedByReservation,  // would fit, but only on capacity held for an older gang
};

struct GangDecision {
  const GangRequest* gang = nullptr;
  Outcome outcome = Outcome::kWaiting;
  Placement placement;                      // the assignment, or the failure and its message
  std::vector<std::string> reserved_nodes;  // kReserved: nodes holding part of its capacity
};

// Capacity freed by preemption for one gang (see 4 above): its pods by node name, so the hold
// survives the snapshot being rebuilt (node indexes may change between cycles).
struct HeldCapacity {
  std::string job_key;                                  // the holder's GangRequest::job_key
  std::vector<std::pair<std::string, Resources>> pods;  // node name, requests
  std::string why;  // appended to the holder's message, e.g. "it preempted ns/a"
};

struct CycleOptions {
  std::chrono::steady_clock::duration reserve_after = std::chrono::seconds(60);
  std::optional<HeldCapacity> held;
};

struct CyclePlan {
  std::vector<GangDecision> decisions;  // queue order
  Snapshot assumed;                     // the input snapshot with every kPlaced gang assumed
};

CyclePlan PlanCycle(const Snapshot& snapshot, std::vector<PendingGang> pending,
                    std::chrono::steady_clock::time_point now, const CycleOptions& options = {});

}  // namespace lockstep::scheduler
