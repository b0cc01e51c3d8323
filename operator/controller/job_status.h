#pragma once
// Small helpers the plan uses to fill TrainingJob status: condition writes with the job's
// generation, and the pod counts behind replicas / readyReplicas / workersReady.

#include <string>
#include <string_view>
#include <vector>

#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

struct PodCounts {
  int32_t existing = 0;     // not being deleted
  int32_t bound = 0;        // have a node
  int32_t running = 0;      // phase Running
  int32_t ready = 0;        // Running with Ready=True
  int32_t succeeded = 0;
  int32_t failed = 0;
  int32_t workers = 0;      // existing, non-terminal pods of role worker
};

PodCounts CountPods(const std::vector<kube::Pod>& pods);

// Pods the spec asks for across all roles.
int32_t DesiredPodCount(const api::TrainingJobSpec& spec);

// Sets condition `type` (True when `value`) with apimachinery's transition-time semantics.
void SetJobCondition(api::TrainingJobStatus* status, std::string_view type, bool value,
                     std::string reason, std::string message, int64_t generation, api::Time now);

bool IsFinished(const api::TrainingJobStatus& status);

}  // namespace lockstep::controller
