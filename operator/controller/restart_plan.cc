#include "operator/controller/restart_plan.h"

#include <algorithm>

#include "operator/api/children.h"
#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/controller/goodput.h"
#include "operator/controller/inplace_policy.h"
#include "operator/controller/node_health.h"
#include "operator/controller/peer_loss.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;

seconds Elapsed(api::Time from, api::Time to) {
  return std::chrono::duration_cast<seconds>(to - from);
}

bool OnLostNode(const Pass& p, const kube::Pod& pod) {
  if (pod.node_name.empty()) return false;
  auto it = p.observed.lost_nodes.find(pod.node_name);
  if (it != p.observed.lost_nodes.end() && it->second.lost) return true;
  // A node the operator found lost on corroborated peer evidence (peer_loss.h) before the node
  // monitor does: no kubelet will confirm a delete there either.
  const std::vector<api::ExcludedNode>& excluded = p.plan->status.excluded_nodes;
  return std::any_of(excluded.begin(), excluded.end(), [&](const api::ExcludedNode& e) {
    return e.name == pod.node_name && e.reason == kReasonPeerReportedLost && p.now < e.until;
  });
}

// v1.Toleration.ToleratesTaint over the kube types (the scheduler's feasibility.h has it over its
// own typed copies).
bool ToleratesTaint(const kube::Toleration& t, const kube::Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  return t.op == "Exists" || t.value == taint.value;
}

// The taint-eviction controller deletes `pod` at once: a NoExecute taint of its node that no
// toleration of the pod matches, or one matches for 0 s. (One tolerated for longer is evicted
// later, by when the successor is bound to another node, which cancels that eviction.)
bool EvictedAtOnce(const kube::Pod& pod, const std::vector<kube::Taint>& no_execute_taints) {
  return std::any_of(no_execute_taints.begin(), no_execute_taints.end(), [&](const kube::Taint& t) {
    return std::none_of(pod.tolerations.begin(), pod.tolerations.end(),
                        [&](const kube::Toleration& tol) {
                          return ToleratesTaint(tol, t) && tol.toleration_seconds.value_or(1) > 0;
                        });
  });
}

// Marked (node_health.h MarkedByTaintEviction) and being deleted: that controller's delete was accepted, and it does nothing more for
// this pod.
bool TaintEvictionDone(const kube::Pod& pod) {
  return pod.meta.deletion_timestamp && MarkedByTaintEviction(pod);
}

// The taint-eviction controller (kube-controller-manager) deletes by name: it reads the pod, adds
// DisruptionTarget and deletes it with no UID precondition, and retries a pod it did not find.
// When the operator had deleted such a pod and created its successor of the same name within
// that window, it deleted the successor (seen: attempt 3's pod marked DeletionByTaintManager,
// the job's maxDisruptions then used up). So a restart leaves such a pod to it until its delete
// was accepted, or for kTaintEvictionWait after the restart (a cluster that runs no such
// controller); the successors wait for it like for any pod of the old attempt.
constexpr seconds kTaintEvictionWait{10};

bool LeftToTaintEviction(Pass& p, const kube::Pod& pod) {
  if (pod.node_name.empty() || TaintEvictionDone(pod)) return false;
  auto it = p.observed.lost_nodes.find(pod.node_name);
  // A pod it marked is its to delete even when the node's taint is not in this operator's cache
  // yet (the verdict then came from the mark: node_health.h TaintEvictionVerdict).
  if (it == p.observed.lost_nodes.end() ||
      !(EvictedAtOnce(pod, it->second.no_execute_taints) || MarkedByTaintEviction(pod))) {
    return false;
  }
  const std::optional<api::LastRestart>& last = p.status().last_restart;
  const api::Time until = (last ? last->time : p.now) + kTaintEvictionWait;
  if (p.now >= until) return false;
  p.RequeueIn(Elapsed(p.now, until) + seconds(1));
  return true;
}

// A pod already being deleted needs nothing more, unless its node is lost: then only a force
// delete removes it.
std::optional<PodDeletion> DeletionFor(Pass& p, const kube::Pod& pod) {
  const bool lost = OnLostNode(p, pod);
  if (pod.meta.deletion_timestamp && !lost) return std::nullopt;
  if (lost && LeftToTaintEviction(p, pod)) return std::nullopt;
  PodDeletion d{pod.meta.name, pod.meta.uid, std::nullopt};
  if (lost) d.grace_period_seconds = 0;
  return d;
}

void CountRestart(Pass& p, const RestartRequest& r, int32_t* backoff_seconds) {
  api::RestartCounts& counts = p.status().restarts;
  *backoff_seconds = 0;
  switch (r.kind) {
    case RestartRequest::Kind::kFailure:
      CountFailureRestart(counts, r.in_place_restarts, r.counts);
      *backoff_seconds = static_cast<int32_t>(
          FailureBackoff(p.job.spec.failure_policy.backoff, counts.consecutive).count());
      counts.consecutive = AddToCount(counts.consecutive, 1);
      break;
    case RestartRequest::Kind::kDisruption:
      if (r.counts) counts.disruptions = AddToCount(counts.disruptions, 1);
      break;
    case RestartRequest::Kind::kResize:
    case RestartRequest::Kind::kRequested:
      break;
  }
}

void ExcludeNodes(Pass& p, const RestartRequest& r) {
  std::vector<api::ExcludedNode>& excluded = p.status().excluded_nodes;
  const api::Time until = p.now + p.options.node_exclusion;
  for (const std::string& node : r.lost_nodes) {
    auto it = std::find_if(excluded.begin(), excluded.end(),
                           [&node](const api::ExcludedNode& e) { return e.name == node; });
    if (it == excluded.end()) it = excluded.insert(excluded.end(), api::ExcludedNode{node, "", {}});
    it->reason = r.reason;
    it->until = until;
  }
}

std::string Describe(const RestartRequest& r, int32_t attempt, int32_t backoff_seconds) {
  std::string out = r.message + "; restarting the gang as attempt " + std::to_string(attempt);
  if (r.size) out += " with " + std::to_string(*r.size) + " workers";
  if (backoff_seconds > 0) out += " after a " + std::to_string(backoff_seconds) + "s backoff";
  if (!r.lost_nodes.empty()) {
    std::string nodes;
    for (const std::string& n : r.lost_nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    out += "; excluding node" + std::string(r.lost_nodes.size() > 1 ? "s " : " ") + nodes;
  }
  return out;
}

}  // namespace

int32_t PlanStaleDeletes(Pass& p, const std::vector<kube::Pod>& stale) {
  if (!p.settled) return static_cast<int32_t>(stale.size());
  for (const kube::Pod& pod : stale) {
    if (std::optional<PodDeletion> d = DeletionFor(p, pod)) p.plan->pod_deletes.push_back(*d);
  }
  return static_cast<int32_t>(stale.size());
}

RestartRequest FromFailure(const FailureDecision& d) {
  RestartRequest r;
  r.kind = d.kind == FailureKind::kDisruption ? RestartRequest::Kind::kDisruption
                                              : RestartRequest::Kind::kFailure;
  r.reason = d.reason;
  r.message = d.message;
  r.counts = d.counts;
  r.in_place_restarts = d.in_place_restarts;
  r.lost_nodes = d.lost_nodes;
  r.failed_at = d.failed_at;
  return r;
}

seconds FailureBackoff(const api::Backoff& backoff, int32_t consecutive) {
  int64_t wait = std::max(0, backoff.initial_seconds);
  for (int32_t i = 0; i < consecutive && wait < backoff.max_seconds; ++i) wait *= 2;
  return seconds(std::min<int64_t>(wait, std::max(0, backoff.max_seconds)));
}

void PlanRestart(Pass& p, const RestartRequest& r, const std::vector<kube::Pod>& current) {
  const int32_t attempt = p.job.status.attempt + 1;
  int32_t backoff_seconds = 0;
  CountRestart(p, r, &backoff_seconds);
  p.status().attempt = attempt;
  if (r.size) p.status().replicas = *r.size;
  p.status().last_restart = api::LastRestart{p.now,           r.reason, r.message, attempt,
                                             backoff_seconds, api::RestartMode::kRecreate,
                                             r.lost_nodes};
  ExcludeNodes(p, r);
  const std::string message = Describe(r, attempt, backoff_seconds);
  p.Condition(api::kConditionRestarting, true, r.reason, message);
  p.Condition(api::kConditionRunning, false, "Restarting", message);
  p.Condition(api::kConditionReconciling, true, "Restarting", message);
  p.State(api::JobState::kRestarting, r.reason, message);
  // StartupFailing was about this attempt's pods; the next attempt's start their own timer.
  api::RemoveCondition(&p.status().conditions, api::kConditionStartupFailing);
  // A resize or a restart someone asked for is news; a failure, or a request that could not be
  // met in place, is a warning.
  const bool requested = r.kind == RestartRequest::Kind::kRequested;
  const bool normal = r.kind == RestartRequest::Kind::kResize ||
                      (requested && r.reason == "RestartRequested");
  p.Event(normal ? "Normal" : "Warning", r.reason, message);
  if (p.settled) {
    for (const kube::Pod& pod : current) {
      if (std::optional<PodDeletion> d = DeletionFor(p, pod)) p.plan->pod_deletes.push_back(*d);
    }
  }
  if (backoff_seconds > 0) p.RequeueIn(seconds(backoff_seconds));
  Plan::Restart metric{r.reason, api::RestartMode::kRecreate, std::nullopt};
  // Node losses are timed by the detector when it sees them (NodeHealthMonitor); pod failures here.
  if (r.failed_at && r.lost_nodes.empty()) {
    metric.detection_delay_seconds =
        std::max(0.0, std::chrono::duration<double>(p.now - *r.failed_at).count());
  }
  p.plan->restart = metric;
  // The gang stopped training at the failure, not at this decision (goodput.h LateRecovery).
  if (r.failed_at) MergeLateRecovery(&p.plan->late_recovery, {r.reason, *r.failed_at, p.now});
}

bool PlanRestartWait(Pass& p, int32_t stale_left) {
  const std::optional<api::LastRestart>& last = p.job.status.last_restart;
  // An in-place restart keeps the attempt's pods: nothing to wait for.
  if (!last || last->attempt != p.job.status.attempt ||
      last->mode == api::RestartMode::kInPlace) {
    return false;
  }
  const std::string previous = "attempt " + std::to_string(last->attempt - 1);
  if (stale_left > 0) {
    p.State(api::JobState::kRestarting, "WaitingForOldPods",
            "waiting for " + std::to_string(stale_left) + " pods of " + previous + " to go");
    return true;
  }
  // lastRestart.time is stored in whole seconds (truncated): wait one more so the real wait is
  // never shorter than backoffSeconds.
  const api::Time start =
      last->time + seconds(last->backoff_seconds + (last->backoff_seconds > 0 ? 1 : 0));
  if (p.now < start) {
    const seconds left = Elapsed(p.now, start) + seconds(1);
    p.State(api::JobState::kRestarting, "BackingOff",
            "backing off " + std::to_string(last->backoff_seconds) + "s before attempt " +
                std::to_string(last->attempt) + " (" + std::to_string(left.count()) + "s left)");
    p.RequeueIn(left);
    return true;
  }
  return false;
}

void PlanRecovered(Pass& p) {
  const bool running = api::IsConditionTrue(p.status().conditions, api::kConditionRunning);
  if (!running) return;
  if (WasTrue(p.job, api::kConditionRestarting)) {
    const std::optional<api::LastRestart>& last = p.job.status.last_restart;
    std::string message = "attempt " + std::to_string(p.job.status.attempt) + " is running";
    if (last) {
      const double took = std::chrono::duration<double>(p.now - last->time).count();
      p.plan->recovery_seconds = std::max(0.0, took);
      message += " " + std::to_string(static_cast<int64_t>(took)) + "s after the " +
                 last->reason + " restart";
    }
    p.Condition(api::kConditionRestarting, false, "Recovered", message);
    p.Event("Normal", "Recovered", message);
  }
  api::RestartCounts& counts = p.status().restarts;
  if (counts.consecutive == 0) return;
  const api::Condition* c = api::FindCondition(p.status().conditions, api::kConditionRunning);
  const seconds reset(p.job.spec.failure_policy.backoff.reset_after_seconds);
  const seconds ran = Elapsed(c->last_transition_time, p.now);
  if (ran >= reset) {
    counts.consecutive = 0;
  } else {
    p.RequeueIn(reset - ran);
  }
}

void ForceDeletesOnLostNodes(Pass& p) {
  std::vector<PodDeletion>& deletes = p.plan->pod_deletes;
  for (const kube::Pod& pod : p.observed.pods) {
    if (!OnLostNode(p, pod)) continue;
    auto it = std::find_if(deletes.begin(), deletes.end(),
                           [&pod](const PodDeletion& d) { return d.uid == pod.meta.uid; });
    if (it != deletes.end()) {
      it->grace_period_seconds = 0;
    } else if (pod.meta.deletion_timestamp) {
      deletes.push_back(PodDeletion{pod.meta.name, pod.meta.uid, 0});
    }
  }
}

void PruneExclusions(Pass& p) {
  std::vector<api::ExcludedNode>& excluded = p.status().excluded_nodes;
  std::erase_if(excluded, [&p](const api::ExcludedNode& e) { return e.until <= p.now; });
  for (const api::ExcludedNode& e : excluded) p.RequeueIn(Elapsed(p.now, e.until) + seconds(1));
}

}  // namespace lockstep::controller
