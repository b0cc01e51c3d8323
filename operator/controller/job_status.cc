#include "operator/controller/job_status.h"

#include "operator/api/children.h"
#include "operator/api/conditions.h"

namespace lockstep::controller {

PodCounts CountPods(const std::vector<kube::Pod>& pods) {
  PodCounts c;
  for (const kube::Pod& pod : pods) {
    if (pod.meta.deletion_timestamp) continue;
    ++c.existing;
    if (!pod.node_name.empty()) ++c.bound;
    if (pod.phase == "Running") {
      ++c.running;
      const kube::Condition* ready = pod.FindCondition("Ready");
      if (ready != nullptr && ready->status == "True") ++c.ready;
    }
    if (pod.phase == "Succeeded") ++c.succeeded;
    if (pod.phase == "Failed") ++c.failed;
    auto role = pod.meta.labels.find(std::string(api::kLabelRole));
    if (!pod.IsTerminal() && role != pod.meta.labels.end() && role->second == api::kWorkerRole) {
      ++c.workers;
    }
  }
  return c;
}

int32_t DesiredPodCount(const api::TrainingJobSpec& spec) {
  int32_t n = spec.replicas;
  for (const api::Role& r : spec.roles) n += r.replicas;
  return n;
}

void SetJobCondition(api::TrainingJobStatus* status, std::string_view type, bool value,
                     std::string reason, std::string message, int64_t generation, api::Time now) {
  api::Condition c;
  c.type = std::string(type);
  c.status = value ? api::ConditionStatus::kTrue : api::ConditionStatus::kFalse;
  c.reason = std::move(reason);
  c.message = std::move(message);
  c.observed_generation = generation;
  api::SetCondition(&status->conditions, std::move(c), now);
}

bool IsFinished(const api::TrainingJobStatus& status) {
  return api::IsConditionTrue(status.conditions, api::kConditionSucceeded) ||
         api::IsConditionTrue(status.conditions, api::kConditionFailed);
}

}  // namespace lockstep::controller
