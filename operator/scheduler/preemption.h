#pragma once
// Gang-aware priority preemption as a pure function: a snapshot, a pending gang that does not fit
// and the running gangs in; the gangs to evict (whole gangs only) and where the preemptor would
// then go out. Thread-safe (reads its inputs only). Policy in full: docs/scheduler.md.
//
//  - Only gangs of strictly lower priority than the preemptor are candidates; none at all when
//    the preemptor's policy is PreemptionPolicy::kNever.
//  - A victim is a whole gang: all of its bound pods leave the snapshot together.
//  - The answer is a set whose eviction makes PlaceGang place the preemptor (the same engine,
//    feasibility and topology rules as a real placement: no second fit test exists), and it is
//    minimal: putting back any one victim makes the preemptor not fit.
//  - Preference: candidates are taken lowest priority first, youngest (latest start) first on
//    ties, then by job key; the shortest such prefix that fits is found by galloping + bisection,
//    then victims are reprieved most valuable first (highest priority, oldest) while the
//    preemptor still fits, until no victim can be put back. So a higher-priority gang is evicted
//    only when the lower ones cannot make room, and no gang is evicted that is not needed.
//  - Empty when the preemptor already fits (nothing to evict), or when evicting every candidate
//    would still not make it fit (evicting some would only waste work).
//
// Cost: O(log n) placements to find the prefix plus about one placement per victim per reprieve
// pass (victims whose pods share no node with the preemptor's placement are reprieved together
// in one check first). bench/preemption: 5,000 nodes / 2,000 running gangs.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/placement.h"
#include "operator/scheduler/resources.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

struct RunningPod {
  std::string node;    // the node it is bound to; a node not in the snapshot is ignored
  Resources requests;  // as counted in the snapshot (AddBoundPod / Assume)
};

// A gang whose pods are bound and counted in the snapshot.
struct RunningGang {
  std::string job_key;  // "namespace/name"
  int32_t priority = 0;
  std::chrono::system_clock::time_point start_time;  // when it was placed; later = younger
  std::vector<RunningPod> pods;                      // every bound pod of the gang
};

struct PreemptionPlan {
  // Indexes into `running`, in eviction preference order (lowest priority, youngest first).
  // Non-empty exactly when the preemptor fits after evicting them.
  std::vector<size_t> victims;
  Placement placement;  // the preemptor on the snapshot without the victims (when non-empty)
  std::string message;  // why there are no victims, when empty
};

PreemptionPlan ChooseVictims(const Snapshot& snapshot, const GangRequest& preemptor,
                             const std::vector<RunningGang>& running);

// `snapshot` as if every pod of the gangs in `victims` were gone (what ChooseVictims evaluated).
Snapshot WithoutGangs(const Snapshot& snapshot, const std::vector<RunningGang>& running,
                      const std::vector<size_t>& victims);

}  // namespace lockstep::scheduler
