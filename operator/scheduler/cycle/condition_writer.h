#pragma once
// Writes the scheduler's pieces of a TrainingJob's status — the Scheduled condition, the
// Preempted condition of a job whose gang it evicted and, for elastic jobs, status.capacity —
// with server-side apply on the status subresource under its own field manager
// ("lockstep-scheduler"). Conditions are a list-map keyed by type in the CRD, so the apply owns
// only the Scheduled and Preempted entries and never touches the controller's conditions
// (docs/scheduler-cycle.md states the contract).
//
// Server-side apply removes any field the manager owned and left out of its next apply, so every
// apply carries ALL pieces as last known (written here, else from the job cache), and applies
// for one job are serialized (a per-job lock held across the request) so an older body never
// lands after a newer one. A condition is written only when its text differs from both the job
// cache and the last text written, and a wait's change is also recorded as an Event (through the
// scheduler's EventRecorder, kube/event_recorder.h: paced, never blocking a write); capacity is
// written only when feasibleReplicas differs (or was never written). Thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/cluster_objects.h"

namespace lockstep::scheduler {

inline constexpr std::string_view kReasonGangPlaced = "GangPlaced";
inline constexpr std::string_view kEventUnschedulable = "Unschedulable";
inline constexpr std::string_view kEventBindFailed = "BindFailed";
inline constexpr std::string_view kEventPreempted = "Preempted";
inline constexpr std::string_view kEventPreempting = "Preempting";
inline constexpr std::string_view kReasonPreempted = "PreemptedByHigherPriority";
inline constexpr std::string_view kReasonRescheduled = "Rescheduled";

struct ScheduledCondition {
  bool placed = false;
  std::string reason;
  std::string message;
};

class ConditionWriter {
 public:
  // `status_client` must apply with the scheduler's field manager; `events` records Events.
  ConditionWriter(kube::RestClient& status_client, kube::EventRecorder& events,
                  const Clock& clock);

  // Applies the condition if it changed; records the matching Event after a successful write.
  // `cycle` is the scheduling cycle that decided it: writes run on a pool and may arrive out of
  // order (a gang's GangPlaced is written when its binds answer, possibly after a later cycle
  // found the job's next gang waiting), so a decision older than one already written is dropped.
  Status Write(const JobInfo& job, const ScheduledCondition& condition, int64_t cycle = 0);
  // Applies status.capacity = {feasible_replicas, now} unless that count is already stored and
  // was observed in the job's current attempt (at or after status.lastRestart.time).
  Status WriteCapacity(const JobInfo& job, int32_t feasible_replicas);
  // Preempted=True (reason PreemptedByHigherPriority, `message` names the preemptor) with a
  // Warning Event "Preempted"; or, when the job's gang is placed again after one, Preempted=False
  // (reason Rescheduled) without an Event. No write when the stored condition already says so.
  Status WritePreempted(const JobInfo& job, bool preempted, const std::string& message);
  // A Warning Event without a condition change (e.g. a bind that failed and was undone).
  void Event(const JobInfo& job, std::string_view reason, const std::string& message);
  // Drops what is remembered about jobs that are gone.
  void Forget(const std::string& job_uid);

 private:
  // What this writer last applied for one job; `mu` serializes that job's applies.
  struct JobState {
    std::mutex mu;
    int64_t newest_cycle = 0;                 // of the newest condition decision seen
    std::string condition_text;               // "" until written or found in the cache
    std::optional<nlohmann::json> condition;  // the Scheduled entry last applied
    std::optional<nlohmann::json> preempted;  // the Preempted entry last applied
    std::optional<api::Capacity> capacity;    // the value last applied
  };

  std::shared_ptr<JobState> StateOf(const std::string& job_uid);
  nlohmann::json ConditionEntry(const JobInfo& job, const ScheduledCondition& condition) const;
  // The apply body: both pieces, each as last applied here or else as cached (if any).
  nlohmann::json ApplyBody(const JobInfo& job, const JobState& state,
                           const std::optional<nlohmann::json>& condition,
                           const std::optional<api::Capacity>& capacity,
                           const std::optional<nlohmann::json>& preempted = std::nullopt) const;
  Status Apply(const JobInfo& job, const nlohmann::json& body);

  kube::RestClient& status_client_;
  kube::EventRecorder& events_;
  const Clock& clock_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<JobState>> jobs_;  // by job uid; guarded by mu_
};

}  // namespace lockstep::scheduler
