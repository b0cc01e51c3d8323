#include "operator/scheduler/cycle/condition_writer.h"

#include "common/log.h"
#include "operator/api/capacity.h"
#include "operator/api/codec.h"
#include "operator/api/conditions.h"
#include "operator/api/time.h"
#include "operator/api/types.h"

namespace lockstep::scheduler {
namespace {

std::string Text(const ScheduledCondition& c) {
  return std::string(c.placed ? "True" : "False") + "|" + c.reason + "|" + c.message;
}

bool SameAsCached(const JobInfo& job, const ScheduledCondition& c) {
  if (!job.scheduled) return false;
  const api::ConditionStatus want = c.placed ? api::ConditionStatus::kTrue
                                             : api::ConditionStatus::kFalse;
  return job.scheduled->status == want && job.scheduled->reason == c.reason &&
         job.scheduled->message == c.message;
}

}  // namespace

ConditionWriter::ConditionWriter(kube::RestClient& status_client, kube::EventRecorder& events,
                                 const Clock& clock)
    : status_client_(status_client), events_(events), clock_(clock) {}

std::shared_ptr<ConditionWriter::JobState> ConditionWriter::StateOf(const std::string& job_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<JobState>& state = jobs_[job_uid];
  if (state == nullptr) state = std::make_shared<JobState>();
  return state;
}

nlohmann::json ConditionWriter::ConditionEntry(const JobInfo& job,
                                               const ScheduledCondition& condition) const {
  const api::ConditionStatus status = condition.placed ? api::ConditionStatus::kTrue
                                                       : api::ConditionStatus::kFalse;
  // lastTransitionTime moves only when the status does (meta.SetStatusCondition semantics).
  api::Time transition = clock_.WallNow();
  if (job.scheduled && job.scheduled->status == status) {
    transition = job.scheduled->last_transition_time;
  }
  return {{"type", std::string(api::kConditionScheduled)},
          {"status", std::string(api::ToString(status))},
          {"observedGeneration", job.meta.generation},
          {"lastTransitionTime", api::FormatTime(transition)},
          {"reason", condition.reason},
          {"message", condition.message}};
}

nlohmann::json ConditionWriter::ApplyBody(const JobInfo& job, const JobState& state,
                                          const std::optional<nlohmann::json>& condition,
                                          const std::optional<api::Capacity>& capacity,
                                          const std::optional<nlohmann::json>& preempted) const {
  nlohmann::json status = nlohmann::json::object();
  nlohmann::json conditions = nlohmann::json::array();
  std::optional<nlohmann::json> entry = condition ? condition : state.condition;
  if (!entry && job.scheduled) entry = api::EncodeCondition(*job.scheduled);
  if (entry) conditions.push_back(*entry);
  std::optional<nlohmann::json> preempted_entry = preempted ? preempted : state.preempted;
  if (!preempted_entry && job.preempted) preempted_entry = api::EncodeCondition(*job.preempted);
  if (preempted_entry) conditions.push_back(*preempted_entry);
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  std::optional<api::Capacity> cap = capacity ? capacity : state.capacity;
  if (!cap) cap = job.capacity;
  if (cap) status["capacity"] = api::EncodeCapacity(*cap);
  return {{"apiVersion", std::string(api::kApiVersion)},
          {"kind", std::string(api::kKind)},
          {"metadata", {{"name", job.meta.name}, {"namespace", job.meta.namespace_}}},
          {"status", status}};
}

Status ConditionWriter::Apply(const JobInfo& job, const nlohmann::json& body) {
  return status_client_
      .Apply(kube::resources::TrainingJobs(), job.meta.namespace_, job.meta.name, body,
             /*force=*/true, "status")
      .status();
}

Status ConditionWriter::Write(const JobInfo& job, const ScheduledCondition& condition,
                              int64_t cycle) {
  const std::string text = Text(condition);
  std::shared_ptr<JobState> state = StateOf(job.meta.uid);
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (cycle < state->newest_cycle) return Status::Ok();  // overtaken by a newer decision
    state->newest_cycle = cycle;
    if (state->condition_text == text) return Status::Ok();
    if (SameAsCached(job, condition)) {
      state->condition_text = text;
      return Status::Ok();
    }
    const nlohmann::json entry = ConditionEntry(job, condition);
    LS_RETURN_IF_ERROR(Apply(job, ApplyBody(job, *state, entry, std::nullopt)));
    state->condition_text = text;
    state->condition = entry;
  }
  if (!condition.placed) Event(job, kEventUnschedulable, condition.message);
  return Status::Ok();
}

Status ConditionWriter::WriteCapacity(const JobInfo& job, int32_t feasible_replicas) {
  std::shared_ptr<JobState> state = StateOf(job.meta.uid);
  std::lock_guard<std::mutex> lock(state->mu);
  const std::optional<api::Capacity>& known = state->capacity ? state->capacity : job.capacity;
  // The controller reads a figure only if it was observed in the current attempt (api::
  // ObservedInAttempt): the same number from before the last restart is news again. CI lost a
  // shrink this way: attempt 0's first look wrote 6 (nodes still entering the cache), the gang
  // then ran 8, and attempt 1's 6 was never written because "6" was already there.
  if (known && known->feasible_replicas == feasible_replicas &&
      api::ObservedInAttempt(*known, job.last_restart_time)) {
    return Status::Ok();
  }
  const api::Capacity capacity{feasible_replicas, clock_.WallNow()};
  LS_RETURN_IF_ERROR(Apply(job, ApplyBody(job, *state, std::nullopt, capacity)));
  state->capacity = capacity;
  log::Info("elastic capacity",
            {{"job", job.meta.Key()}, {"feasibleReplicas", std::to_string(feasible_replicas)}});
  return Status::Ok();
}

Status ConditionWriter::WritePreempted(const JobInfo& job, bool preempted,
                                       const std::string& message) {
  const api::ConditionStatus status =
      preempted ? api::ConditionStatus::kTrue : api::ConditionStatus::kFalse;
  const std::string reason(preempted ? kReasonPreempted : kReasonRescheduled);
  std::shared_ptr<JobState> state = StateOf(job.meta.uid);
  {
    std::lock_guard<std::mutex> lock(state->mu);
    std::optional<nlohmann::json> known = state->preempted;
    if (!known && job.preempted) known = api::EncodeCondition(*job.preempted);
    // Rescheduled is only news after a preemption; a repeated preemption message is no news.
    if (!preempted && (!known || known->value("status", "") != "True")) {
      return Status::Ok();
    }
    if (known && known->value("status", "") == api::ToString(status) &&
        known->value("message", "") == message) {
      return Status::Ok();
    }
    api::Time transition = clock_.WallNow();
    if (known && known->value("status", "") == api::ToString(status)) {
      if (auto t = api::ParseTime(known->value("lastTransitionTime", "")); t.ok()) transition = *t;
    }
    const nlohmann::json entry = {{"type", std::string(kConditionPreempted)},
                                  {"status", std::string(api::ToString(status))},
                                  {"observedGeneration", job.meta.generation},
                                  {"lastTransitionTime", api::FormatTime(transition)},
                                  {"reason", reason},
                                  {"message", message}};
    LS_RETURN_IF_ERROR(Apply(job, ApplyBody(job, *state, std::nullopt, std::nullopt, entry)));
    state->preempted = entry;
  }
  if (preempted) Event(job, kEventPreempted, message);
  return Status::Ok();
}

void ConditionWriter::Event(const JobInfo& job, std::string_view reason,
                            const std::string& message) {
  events_.Record({std::string(api::kApiVersion), std::string(api::kKind), job.meta.namespace_,
                  job.meta.name, job.meta.uid, job.meta.resource_version},
                 "Warning", std::string(reason), message);
}

void ConditionWriter::Forget(const std::string& job_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(job_uid);
}

}  // namespace lockstep::scheduler
