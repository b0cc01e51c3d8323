#include "operator/controller/kueue_plan.h"

#include "operator/api/conditions.h"
#include "operator/api/time.h"
#include "operator/controller/job_status.h"

namespace lockstep::controller {
namespace {

// kueue::Decide's reason for a job whose Workload is evicted (operator/kueue/gate.cc).
constexpr std::string_view kEvictedReason = "Evicted";

kueue::JobFacts FactsOf(const Pass& p) {
  kueue::JobFacts facts;
  for (const kube::Pod& pod : p.observed.pods) facts.pods_existing += !pod.IsTerminal();
  const PodCounts c = CountPods(p.pods);
  facts.pods_ready = c.ready + c.succeeded >= DesiredPodCount(p.spec) && c.ready > 0;
  facts.suspended = p.job.spec.run_policy.suspend;
  if (IsFinished(p.job.status)) {
    const bool ok = api::IsConditionTrue(p.job.status.conditions, api::kConditionSucceeded);
    facts.finished = kueue::JobFacts::Finished{ok, p.job.status.message};
  }
  return facts;
}

// An eviction the stored status does not show yet. It is an event even when the Admitted=True
// before it was never stored: the pass that creates the pods writes that after its creates, a
// conflict with the scheduler's status write leaves it to the next pass, and Kueue may evict the
// job first (CI, 2026-12-04: a job preempted 0.3 s after its pods were created got no event).
bool NewEviction(const api::TrainingJob& job, const kueue::Decision& d) {
  if (d.reason != kEvictedReason) return false;
  const api::Condition* stored = api::FindCondition(job.status.conditions, api::kConditionAdmitted);
  return stored == nullptr || stored->status != api::ConditionStatus::kFalse ||
         stored->reason != kEvictedReason;
}

}  // namespace

std::optional<kueue::Decision> PlanKueue(Pass& p) {
  if (!p.observed.kueue) return std::nullopt;
  const kueue::JobFacts facts = FactsOf(p);
  kueue::Decision d = kueue::Decide(p.job, *p.observed.kueue, facts, api::FormatTime(p.now));
  p.plan->workload_writes = d.writes;
  if (facts.finished) return d;  // the Admitted condition keeps its last word
  const bool was = WasTrue(p.job, api::kConditionAdmitted);
  p.Condition(api::kConditionAdmitted, d.admitted, d.reason, d.message);
  if (d.admitted && !was) p.Event("Normal", "Admitted", d.message);
  if (!d.admitted && (was || NewEviction(p.job, d))) p.Event("Warning", d.reason, d.message);
  return d;
}

}  // namespace lockstep::controller
