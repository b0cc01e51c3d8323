#pragma once
// The inputs and output of one ComputePlan pass, shared by the plan's step files (plan.cc,
// restart_plan.cc) so each step takes one argument. Internal to the controller.

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "operator/api/conditions.h"
#include "operator/controller/job_status.h"
#include "operator/controller/plan_types.h"

namespace lockstep::controller {

struct SpareView;  // spare_plan.h

struct Pass {
  const api::TrainingJob& job;
  const Observed& observed;
  api::Time now;
  bool settled;
  const PlanOptions& options;
  Plan* plan;
  // The current attempt's pods (label lockstep.dev/attempt == status.attempt) and the rest.
  const std::vector<kube::Pod>& pods;
  const std::vector<kube::Pod>& stale_pods;
  // job.spec with replicas = this attempt's workers (an elastic job may run smaller).
  const api::TrainingJobSpec& spec;
  // What Kueue's admission adds to each role's pods (kueue_plan.h); null: nothing.
  const std::map<std::string, api::RolePlacement>* placements = nullptr;
  // Hot spares (spare_plan.h): the split `pods` came from; null for a job without spares.
  const SpareView* spares = nullptr;

  int64_t gen() const { return job.metadata.generation; }
  api::TrainingJobStatus& status() { return plan->status; }
  void Condition(std::string_view type, bool value, std::string reason, std::string message) {
    SetJobCondition(&plan->status, type, value, std::move(reason), std::move(message), gen(), now);
  }
  void State(api::JobState state, std::string reason, std::string message) {
    plan->status.state = state;
    plan->status.reason = std::move(reason);
    plan->status.message = std::move(message);
  }
  void Event(std::string type, std::string reason, std::string message) {
    plan->events.push_back({std::move(type), std::move(reason), std::move(message)});
  }
  void RequeueIn(std::chrono::seconds d) {
    if (d < std::chrono::seconds(1)) d = std::chrono::seconds(1);
    if (!plan->requeue_after || d < *plan->requeue_after) plan->requeue_after = d;
  }
};

inline bool WasTrue(const api::TrainingJob& job, std::string_view type) {
  return api::IsConditionTrue(job.status.conditions, type);
}

}  // namespace lockstep::controller
