// Phase 7 of the cycle, preemption (docs/scheduler.md, "Preemption"): GangScheduler's members
// that choose victims for the head of the queue, evict them, and hold what they free.
//
// Who writes what: the scheduler is the one author of the victim's `Preempted` condition and of
// the Preempted/Preempting Events (it alone knows the preemptor). On each victim pod it sets
// DisruptionTarget=True (reason PreemptionByScheduler, as kube-scheduler does) before deleting
// it, so the controller's failure policy counts the restart as a disruption (maxDisruptions),
// never against maxRestarts (failure_policy.h, step 2).

#include <algorithm>

#include "common/log.h"
#include "operator/api/time.h"
#include "operator/scheduler/cycle/gang_scheduler.h"
#include "operator/scheduler/preemption.h"

namespace lockstep::scheduler {
namespace {

std::string JoinKeys(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& key : keys) out += (out.empty() ? "" : ", ") + key;
  return out;
}

nlohmann::json DisruptionTargetApply(const kube::Pod& pod, const std::string& message,
                                     api::Time now) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", pod.meta.name}, {"namespace", pod.meta.namespace_}}},
      {"status",
       {{"conditions", nlohmann::json::array({{{"type", "DisruptionTarget"},
                                               {"status", "True"},
                                               {"reason", "PreemptionByScheduler"},
                                               {"message", message},
                                               {"lastTransitionTime", api::FormatTime(now)}}})}}}};
}

}  // namespace

void GangScheduler::ExpireHold(const GangCollection& gangs, Steady now) {
  if (!hold_) return;
  const bool waiting =
      std::any_of(gangs.complete.begin(), gangs.complete.end(),
                  [&](const CollectedGang& g) { return g.key == hold_->gang_key; });
  if (waiting && now < hold_->until) return;
  log::Info("preemption hold released",
            {{"gang", hold_->gang_key}, {"why", waiting ? "held too long" : "no longer waiting"}});
  hold_.reset();
}

std::string GangScheduler::Preempt(const CollectedGang& head, const CyclePlan& plan,
                                   const std::vector<PodPtr>& pods, Steady now) {
  // One preemption at a time: while victims terminate, the holder waits on what they free.
  if (!options_.preemption || hold_ || head.request.preemption_policy == PreemptionPolicy::kNever) {
    return "";
  }
  CollectOptions collect;
  collect.scheduler_name = options_.scheduler_name;
  collect.namespace_filter = options_.namespace_filter;
  const CollectInputs inputs = Inputs();  // binds started since the cycle began count too
  const RunningGangs running = CollectRunningGangs(pods, inputs, collect);
  // On the cycle's snapshot with this cycle's placements assumed: what is really left.
  const PreemptionPlan choice = ChooseVictims(plan.assumed, head.request, running.gangs);
  if (choice.victims.empty()) return "";

  std::vector<std::string> names;
  for (size_t v : choice.victims) names.push_back(running.gangs[v].job_key);
  HeldCapacity held;
  held.job_key = head.request.job_key;
  held.why = "it preempted " + JoinKeys(names);
  for (const PodAssignment& a : choice.placement.assignments) {
    held.pods.emplace_back(a.node_name, head.request.roles[a.role].pods[a.replica].requests);
  }
  hold_ = Hold{head.key, std::move(held), now + options_.preemption_hold};
  const std::string message =
      "preempting " + std::to_string(names.size()) +
      " running gang(s) of lower priority so that it fits: " + JoinKeys(names);
  log::Info("preemption", {{"preemptor", head.request.job_key}, {"victims", JoinKeys(names)}});
  conditions_.Event(*head.job, kEventPreempting, message);
  for (size_t v : choice.victims) Evict(running, v, head);
  return "; " + message;
}

// Marks every pod of the victim's gang DisruptionTarget, deletes it, then records Preempted on
// the job. The gang key stays in flight meanwhile, so no cycle collects it again half-deleted.
void GangScheduler::Evict(const RunningGangs& running, size_t victim,
                          const CollectedGang& preemptor) {
  const std::string key = running.keys[victim];
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.insert(key);
  }
  metrics_.preemptions.Increment();
  ++gangs_preempted_;
  const std::string message = "preempted by " + preemptor.request.job_key + " (priority " +
                              std::to_string(preemptor.request.priority) + " > " +
                              std::to_string(running.gangs[victim].priority) + "): all " +
                              std::to_string(running.pods[victim].size()) +
                              " pods deleted; the job restarts when capacity returns";
  pool_->Submit([this, key, message, job = running.jobs[victim], pods = running.pods[victim]] {
    int deleted = 0;
    for (const PodPtr& pod : pods) {
      Status marked = status_client_
                          ->Apply(kube::resources::Pods(), pod->meta.namespace_, pod->meta.name,
                                  DisruptionTargetApply(*pod, message, clock_.WallNow()),
                                  /*force=*/true, "status")
                          .status();
      if (!marked.ok() && !IsNotFound(marked)) {
        log::Warning("cannot mark a preempted pod",
                     {{"pod", pod->meta.Key()}, {"error", marked.ToString()}});
      }
      if (DeleteUnlessReplaced(*pod)) ++deleted;
    }
    Status written = conditions_.WritePreempted(*job, true, message);
    if (!written.ok()) {
      log::Warning("cannot write Preempted condition",
                   {{"job", job->meta.Key()}, {"error", written.ToString()}});
    }
    log::Info("gang preempted", {{"gang", key}, {"deleted", std::to_string(deleted)}});
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(key);
    }
    Trigger();
  });
}

}  // namespace lockstep::scheduler
