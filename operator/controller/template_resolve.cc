#include "operator/controller/template_resolve.h"

#include "operator/api/children.h"
#include "operator/api/codec.h"
#include "operator/api/conditions.h"

namespace lockstep::controller {
namespace {

api::Condition TemplateCondition(bool ready, std::string_view reason, std::string message,
                                 const CachedJob& job) {
  api::Condition c;
  c.type = std::string(api::kConditionTemplateReady);
  c.status = ready ? api::ConditionStatus::kTrue : api::ConditionStatus::kFalse;
  c.observed_generation = job.job.metadata.generation;
  c.reason = std::string(reason);
  c.message = api::BoundedMessage(std::move(message), 1024);
  return c;
}

std::string Generation(const api::ResolvedTemplate& r) {
  return r.kind + "/" + r.name + " (generation " + std::to_string(r.generation) + ")";
}

}  // namespace

TemplateResolution ResolveTemplate(const CachedTemplate* found, bool caches_synced, api::Time now,
                                   CachedJob* job) {
  TemplateResolution out;
  out.ref = job->template_ref;
  if (!job->template_ref) return out;
  if (!job->awaits_template) {
    out.state = TemplateResolution::State::kSnapshot;
    return out;
  }
  if (found == nullptr) {
    out.state = caches_synced ? TemplateResolution::State::kNotFound
                              : TemplateResolution::State::kCachesNotSynced;
    return out;
  }
  out.state = TemplateResolution::State::kLive;
  out.live = api::ResolvedTemplate{job->template_ref->kind,
                                   job->template_ref->name,
                                   found->meta.uid,
                                   found->meta.resource_version,
                                   found->meta.generation,
                                   now,
                                   found->spec};
  const std::string with = "merged with " + api::Describe(*job->template_ref) + ": ";
  StatusOr<nlohmann::json> merged = api::MergeTemplateSpec(found->spec, job->raw_spec);
  if (!merged.ok()) {
    job->spec_error = with + std::string(merged.status().message());
    return out;
  }
  StatusOr<api::TrainingJobSpec> spec = api::DecodeSpec(*merged);
  if (!spec.ok()) {
    job->spec_error = with + std::string(spec.status().message());
    return out;
  }
  job->job.spec = std::move(spec).value();
  return out;
}

void RecordTemplate(const TemplateResolution& r, const CachedJob& job, api::Time now,
                    Plan* plan) {
  using State = TemplateResolution::State;
  if (r.state == State::kSnapshot && job.job.status.resolved_template) {
    const api::ResolvedTemplate& snap = *job.job.status.resolved_template;
    plan->status.resolved_template = snap;  // never dropped, whatever step built the status
    api::SetCondition(&plan->status.conditions,
                      TemplateCondition(true, api::kReasonTemplateSnapshotted,
                                        "runs with " + Generation(snap) +
                                            " as of its first pods (status.resolvedTemplate): "
                                            "edits to the template do not change this job",
                                        job),
                      now);
    return;
  }
  if (r.state != State::kLive || !r.live) return;
  const bool starts = !plan->pod_creates.empty() && !plan->conditions_only;
  if (!starts) {
    api::SetCondition(&plan->status.conditions,
                      TemplateCondition(true, api::kReasonTemplateResolved,
                                        "merged with " + Generation(*r.live) +
                                            "; the job keeps this version once it starts pods",
                                        job),
                      now);
    return;
  }
  plan->status.resolved_template = *r.live;
  const std::string message = "runs with " + Generation(*r.live) +
                              " as of its first pods (status.resolvedTemplate): edits to the "
                              "template do not change this job";
  api::SetCondition(&plan->status.conditions,
                    TemplateCondition(true, api::kReasonTemplateSnapshotted, message, job), now);
  plan->events.push_back({"Normal", std::string(api::kReasonTemplateSnapshotted), message});
}

Plan HoldForTemplate(const TemplateResolution& r, const CachedJob& job, api::Time now) {
  Plan plan;
  plan.status = job.job.status;
  plan.decided_by = "TemplateNotFound";
  const std::string what = r.ref ? api::Describe(*r.ref) : std::string("its template");
  const std::string where =
      r.ref && !r.ref->cluster_scoped() ? " in namespace " + job.meta.namespace_ : "";
  const std::string message = "waiting for " + what + where +
                              ": not found; the job starts when it is created";
  if (job.status_error.empty()) {
    plan.status.observed_generation = job.job.metadata.generation;
    plan.status.selector = api::JobSelector(job.job.metadata.name);
    if (!plan.status.state) plan.status.state = api::JobState::kPending;
    plan.status.reason = std::string(api::kReasonTemplateNotFound);
    plan.status.message = message;
  } else {
    plan.conditions_only = true;
  }
  const api::Condition* before =
      api::FindCondition(job.job.status.conditions, api::kConditionTemplateReady);
  if (before == nullptr || before->reason != api::kReasonTemplateNotFound) {
    plan.events.push_back({"Warning", std::string(api::kReasonTemplateNotFound), message});
  }
  api::SetCondition(&plan.status.conditions,
                    TemplateCondition(false, api::kReasonTemplateNotFound, message, job), now);
  return plan;
}

}  // namespace lockstep::controller
