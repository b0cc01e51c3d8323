#pragma once
// The template step of a pass (docs/api.md "Templates"), before ComputePlan. A job that names a
// template in spec.templateRef runs with the template's spec and its own merged over it
// (api::MergeTemplateSpec):
//   - until the job first creates pods, over the live template from the caches: an edit made
//     while the job waits (queued, suspended, gang not placed) still counts;
//   - from the pass that first creates its pods, over the snapshot that pass records in
//     status.resolvedTemplate (written before the pods: RecordsFirst in reconciler.cc), and
//     nothing else: editing or deleting the template never changes a started job, and every
//     restart of it (a new attempt) is built from the same merged spec. CachedJob merges the
//     snapshot at decode, so the gang scheduler reads the same spec (api::SnapshotSpec).
//   - a template that does not exist holds the job: TemplateReady=False reason TemplateNotFound
//     naming it, state Pending, a Warning event on the transition, no pods; the template's add
//     wakes the job (TemplateCaches' handler). Not a crash loop, not a retry timer.
// A merge that fails, or a merged spec that breaks a rule, is the job's spec error: Stalled with
// reason InvalidSpec naming the field (plan.cc's UndecodableSpec / InvalidSpec steps).
// The step is the one author of the TemplateReady condition and of status.resolvedTemplate.
// Pure: every function here is table-tested in tests/unit/controller/template_resolve_test.cc.

#include <optional>

#include "operator/api/resolved_template.h"
#include "operator/api/template_merge.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/plan_types.h"
#include "operator/controller/template_caches.h"

namespace lockstep::controller {

struct TemplateResolution {
  enum class State {
    kNone,             // the job names no template
    kSnapshot,         // merged over status.resolvedTemplate (at decode)
    kLive,             // merged over the live template; `live` is the snapshot to take
    kNotFound,         // the template does not exist: hold the job
    kCachesNotSynced,  // the template caches have not listed yet: try again shortly
  };
  State state = State::kNone;
  std::optional<api::TemplateRef> ref;
  std::optional<api::ResolvedTemplate> live;
};

// For a job awaiting its template: merges `found` (null: none) into job->job.spec, or sets
// job->spec_error naming the field. Other jobs are left as they are. `now` stamps the snapshot.
TemplateResolution ResolveTemplate(const CachedTemplate* found, bool caches_synced, api::Time now,
                                   CachedJob* job);

// After ComputePlan: the TemplateReady condition in the plan's status and, when the plan creates
// the job's first pods from a live template, the snapshot (with a Normal event). A plan that may
// write only conditions gets the condition alone.
void RecordTemplate(const TemplateResolution& resolution, const CachedJob& job, api::Time now,
                    Plan* plan);

// The whole plan for a job whose template does not exist (State::kNotFound).
Plan HoldForTemplate(const TemplateResolution& resolution, const CachedJob& job, api::Time now);

}  // namespace lockstep::controller
