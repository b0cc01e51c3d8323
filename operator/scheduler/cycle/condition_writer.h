#pragma once
// Writes the scheduler's one piece of a TrainingJob's status, the Scheduled condition, with
// server-side apply on the status subresource under its own field manager
// ("lockstep-scheduler"). Conditions are a list-map keyed by type in the CRD, so the apply owns
// only the Scheduled entry and never touches the controller's conditions (docs/
// scheduler-cycle.md states the contract). A write happens only when the text differs from
// both the job cache and the last text written; a change also records an Event.
// Thread-safe.

#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/cluster_objects.h"

namespace lockstep::scheduler {

inline constexpr std::string_view kReasonGangPlaced = "GangPlaced";
inline constexpr std::string_view kEventUnschedulable = "Unschedulable";
inline constexpr std::string_view kEventBindFailed = "BindFailed";

struct ScheduledCondition {
  bool placed = false;
  std::string reason;
  std::string message;
};

class ConditionWriter {
 public:
  // `status_client` must apply with the scheduler's field manager; `client` creates Events.
  ConditionWriter(kube::RestClient& status_client, kube::RestClient& client, const Clock& clock);

  // Applies the condition if it changed; emits the matching Event after a successful write.
  Status Write(const JobInfo& job, const ScheduledCondition& condition);
  // A Warning Event without a condition change (e.g. a bind that failed and was undone).
  Status Event(const JobInfo& job, std::string_view reason, const std::string& message);
  // Drops what is remembered about jobs that are gone.
  void Forget(const std::string& job_uid);

 private:
  nlohmann::json ApplyBody(const JobInfo& job, const ScheduledCondition& condition) const;

  kube::RestClient& status_client_;
  kube::RestClient& client_;
  const Clock& clock_;
  std::mutex mu_;
  std::map<std::string, std::string> last_written_;  // job uid -> text; guarded by mu_
};

}  // namespace lockstep::scheduler
