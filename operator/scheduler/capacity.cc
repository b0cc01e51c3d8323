#include "operator/scheduler/capacity.h"

#include <algorithm>

#include "operator/scheduler/placement.h"

namespace lockstep::scheduler {
namespace {

bool Fits(const Snapshot& snapshot, GangRequest& gang, size_t worker_role, int32_t workers) {
  std::vector<PodRequest>& pods = gang.roles[worker_role].pods;
  const PodRequest worker = pods.front();
  pods.assign(static_cast<size_t>(workers), worker);
  return PlaceGang(snapshot, gang).placed();
}

}  // namespace

int32_t FeasibleReplicas(const Snapshot& snapshot, GangRequest gang, size_t worker_role,
                         int32_t min_replicas, int32_t max_replicas) {
  if (worker_role >= gang.roles.size() || gang.roles[worker_role].pods.empty()) return 0;
  // A gang of zero workers is not a job: the smallest size asked about is one worker.
  const int32_t low_bound = std::max(min_replicas, 1);
  if (max_replicas < low_bound) return 0;
  if (Fits(snapshot, gang, worker_role, max_replicas)) return max_replicas;
  if (!Fits(snapshot, gang, worker_role, low_bound)) return 0;
  // Invariant: `fits` places, `fails` does not.
  int32_t fits = low_bound;
  int32_t fails = max_replicas;
  while (fails - fits > 1) {
    const int32_t mid = fits + (fails - fits) / 2;
    (Fits(snapshot, gang, worker_role, mid) ? fits : fails) = mid;
  }
  return fits;
}

}  // namespace lockstep::scheduler
