#pragma once
// Which attempt a pod belongs to: the lockstep.dev/attempt label the pod builder writes
// (api/children.h), read back. The ground floor of the controller's plan: the plan, its steps and
// the reconciler all split pods by attempt, and this file includes no plan step (so a file that
// only needs the split includes no restart rules). Pure.

#include <cstdint>
#include <vector>

#include "operator/kube/objects.h"

namespace lockstep::controller {

// The label's value; 0 when it is absent or not a whole decimal int32 (an unlabelled pod is of
// the first attempt, and so older than any restart).
int32_t PodAttempt(const kube::Pod& pod);

struct AttemptPods {
  std::vector<kube::Pod> current;
  std::vector<kube::Pod> stale;  // older attempts (or unlabelled), being deleted
};

// `pods` split into those of `attempt` (status.attempt) and the rest, each in the input's order.
AttemptPods SplitByAttempt(const std::vector<kube::Pod>& pods, int32_t attempt);

}  // namespace lockstep::controller
