#pragma once
// Elastic capacity as a pure function: the largest worker count in [min, max] whose whole gang
// (those workers plus every other role's pods) PlaceGang would place on the snapshot now, with
// the same feasibility, exclusion and topology rules as a real placement. The driver publishes it
// as status.capacity.feasibleReplicas so the controller can restart an elastic job at a size that
// fits, or grow it back. Thread-safe (reads the snapshot only).

#include <cstddef>
#include <cstdint>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

// `gang` carries every role with its real pods; gang.roles[worker_role].pods.front() is the
// request of one worker, and the worker role is resized to each candidate count. The caller
// releases capacity the job would give up (its own bound pods) from `snapshot` first.
// Returns 0 when not even `min_replicas` workers fit (or the request is unusable).
//
// Placement is greedy, so "fits" is not strictly monotone in the worker count; the search checks
// `max_replicas` first (the grow-back question), then `min_replicas`, then bisects between them,
// which costs O(log(max - min)) placements however large the job.
int32_t FeasibleReplicas(const Snapshot& snapshot, GangRequest gang, size_t worker_role,
                         int32_t min_replicas, int32_t max_replicas);

}  // namespace lockstep::scheduler
