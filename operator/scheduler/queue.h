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

#include <chrono>
#include <optional>
#include <string>
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

struct CycleOptions {
  std::chrono::steady_clock::duration reserve_after = std::chrono::seconds(60);
};

struct CyclePlan {
  std::vector<GangDecision> decisions;  // queue order
  Snapshot assumed;                     // the input snapshot with every kPlaced gang assumed
};

CyclePlan PlanCycle(const Snapshot& snapshot, std::vector<PendingGang> pending,
                    std::chrono::steady_clock::time_point now, const CycleOptions& options = {});

}  // namespace lockstep::scheduler
