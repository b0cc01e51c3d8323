#include "operator/scheduler/cycle/condition_writer.h"

#include "common/log.h"
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

ConditionWriter::ConditionWriter(kube::RestClient& status_client, kube::RestClient& client,
                                 const Clock& clock)
    : status_client_(status_client), client_(client), clock_(clock) {}

nlohmann::json ConditionWriter::ApplyBody(const JobInfo& job,
                                          const ScheduledCondition& condition) const {
  const api::ConditionStatus status = condition.placed ? api::ConditionStatus::kTrue
                                                       : api::ConditionStatus::kFalse;
  // lastTransitionTime moves only when the status does (meta.SetStatusCondition semantics).
  api::Time transition = clock_.WallNow();
  if (job.scheduled && job.scheduled->status == status) {
    transition = job.scheduled->last_transition_time;
  }
  return {{"apiVersion", std::string(api::kApiVersion)},
          {"kind", std::string(api::kKind)},
          {"metadata", {{"name", job.meta.name}, {"namespace", job.meta.namespace_}}},
          {"status",
           {{"conditions",
             {{{"type", std::string(api::kConditionScheduled)},
               {"status", std::string(api::ToString(status))},
               {"observedGeneration", job.meta.generation},
               {"lastTransitionTime", api::FormatTime(transition)},
               {"reason", condition.reason},
               {"message", condition.message}}}}}}};
}

Status ConditionWriter::Write(const JobInfo& job, const ScheduledCondition& condition) {
  const std::string text = Text(condition);
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string& last = last_written_[job.meta.uid];
    if (last == text) return Status::Ok();
    if (SameAsCached(job, condition)) {
      last = text;
      return Status::Ok();
    }
    last = text;  // claimed before the write so concurrent duplicates do not both write
  }
  StatusOr<nlohmann::json> applied =
      status_client_.Apply(kube::resources::TrainingJobs(), job.meta.namespace_, job.meta.name,
                           ApplyBody(job, condition), /*force=*/true, "status");
  if (!applied.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    last_written_.erase(job.meta.uid);
    return applied.status();
  }
  if (condition.placed) return Status::Ok();
  return Event(job, kEventUnschedulable, condition.message);
}

Status ConditionWriter::Event(const JobInfo& job, std::string_view reason,
                              const std::string& message) {
  const std::string now = api::FormatTime(clock_.WallNow());
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", job.meta.name + "."}, {"namespace", job.meta.namespace_}}},
      {"involvedObject",
       {{"apiVersion", std::string(api::kApiVersion)},
        {"kind", std::string(api::kKind)},
        {"name", job.meta.name},
        {"namespace", job.meta.namespace_},
        {"uid", job.meta.uid}}},
      {"reason", std::string(reason)},
      {"message", message},
      {"type", "Warning"},
      {"source", {{"component", "lockstep-scheduler"}}},
      {"reportingComponent", "lockstep-scheduler"},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  return client_.Create(kube::resources::Events(), job.meta.namespace_, event).status();
}

void ConditionWriter::Forget(const std::string& job_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  last_written_.erase(job_uid);
}

}  // namespace lockstep::scheduler
