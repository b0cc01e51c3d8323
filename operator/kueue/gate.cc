#include "operator/kueue/gate.h"

#include <algorithm>
#include <utility>

#include "operator/api/conditions.h"
#include "operator/kueue/admission.h"
#include "operator/kueue/workload.h"

namespace lockstep::kueue {
namespace {

using nlohmann::json;

struct ConditionChange {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
};

// Kueue truncates condition messages to the API's 32 KiB limit; the operator's are short, but a
// message copied from a job (its failure) is bounded the same way.
std::string Bounded(std::string message) {
  constexpr size_t kMax = 32 * 1024 - 16;
  return api::BoundedMessage(std::move(message), kMax);
}

// What a condition says: its status, reason, message and the generation it is about. A rewrite
// that changes none of them is no change.
bool SameCondition(const json& a, const json& b) {
  for (const char* key : {"status", "reason", "message"}) {
    if (a.value(key, "") != b.value(key, "")) return false;
  }
  return a.value("observedGeneration", int64_t{0}) == b.value("observedGeneration", int64_t{0});
}

// A merge patch of status.conditions (the whole list, as the CRD stores it, with these changes:
// lastTransitionTime moves only when the status does) and, when `clear_admission`, of
// status.admission; guarded by the resourceVersion, so a write of Kueue's in between makes this
// one fail instead of being overwritten. Null when nothing changes.
json StatusPatch(const WorkloadView& w, const std::vector<ConditionChange>& changes,
                 bool clear_admission, const std::string& now) {
  json conditions = w.raw_conditions.is_array() ? w.raw_conditions : json::array();
  bool changed = clear_admission && w.admission.has_value();
  for (const ConditionChange& c : changes) {
    json next = {{"type", c.type},       {"status", c.status},
                 {"reason", c.reason},   {"message", Bounded(c.message)},
                 {"observedGeneration", w.generation}, {"lastTransitionTime", now}};
    bool found = false;
    for (json& existing : conditions) {
      if (!existing.is_object() || existing.value("type", "") != c.type) continue;
      found = true;
      if (existing.value("status", "") == c.status) {
        next["lastTransitionTime"] = existing.value("lastTransitionTime", now);
      }
      if (!SameCondition(existing, next)) {
        existing = next;
        changed = true;
      }
    }
    if (!found) {
      conditions.push_back(next);
      changed = true;
    }
  }
  if (!changed) return nullptr;
  json status = {{"conditions", std::move(conditions)}};
  if (clear_admission) status["admission"] = nullptr;
  return {{"metadata", {{"resourceVersion", w.resource_version}}}, {"status", std::move(status)}};
}

void AddStatusWrite(Decision& d, const WorkloadView& w, const std::vector<ConditionChange>& changes,
                    bool clear_admission, const std::string& now) {
  json patch = StatusPatch(w, changes, clear_admission, now);
  if (patch.is_null()) return;
  d.writes.push_back({WorkloadWrite::Kind::kPatchStatus, w.name, w.uid, std::move(patch)});
}

json Resources(const json& container) {
  return container.is_object() ? container.value("resources", json::object()) : json::object();
}

// The containers' resources of a PodTemplateSpec, in order: what Kueue's quota is made of.
json ResourcesOf(const json& pod_template) {
  json out = json::array();
  const json spec = pod_template.is_object() ? pod_template.value("spec", json::object()) : json();
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.is_object() || !spec.contains(list) || !spec[list].is_array()) continue;
    for (const json& c : spec[list]) out.push_back(Resources(c));
  }
  return out;
}

// The Workload this job keeps: the non-deleting one that matches, preferring one with quota,
// then the one named as the operator names it; the others are deleted.
const WorkloadView* ChooseWorkload(const api::TrainingJob& job, const KueueObservation& observed,
                                   Decision& d) {
  const WorkloadView* keep = nullptr;
  auto better = [&](const WorkloadView& a, const WorkloadView& b) {
    if (a.IsTrue(kQuotaReserved) != b.IsTrue(kQuotaReserved)) return a.IsTrue(kQuotaReserved);
    return a.name == WorkloadName(job) && b.name != WorkloadName(job);
  };
  for (const WorkloadView& w : observed.workloads) {
    if (w.deleting || !MatchesJob(w, job)) continue;
    if (keep == nullptr || better(w, *keep)) keep = &w;
  }
  for (const WorkloadView& w : observed.workloads) {
    if (&w == keep || w.deleting) continue;
    // A stale one with quota is deleted only once the pods it admitted are gone (step 3).
    if (keep == nullptr && w.IsTrue(kQuotaReserved)) continue;
    d.writes.push_back({WorkloadWrite::Kind::kDelete, w.name, w.uid, nullptr});
  }
  return keep;
}

void Hold(Decision& d, std::string reason, std::string message) {
  d.run = false;
  d.reason = std::move(reason);
  d.message = std::move(message);
}

// No matching Workload: make one once no pod is left (and the priority is known).
void CreateWorkload(const api::TrainingJob& job, const KueueObservation& observed,
                    const JobFacts& facts, Decision& d) {
  bool stale_with_quota = false;
  bool deleting = false;
  for (const WorkloadView& w : observed.workloads) {
    stale_with_quota |= !w.deleting && w.IsTrue(kQuotaReserved);
    deleting |= w.deleting;
  }
  const bool deleting_now = std::any_of(d.writes.begin(), d.writes.end(), [](const auto& w) {
    return w.kind == WorkloadWrite::Kind::kDelete;
  });
  if (facts.pods_existing > 0) {
    Hold(d, stale_with_quota ? "WorkloadOutdated" : "StoppingPods",
         "stopping the job's " + std::to_string(facts.pods_existing) +
             " pods before its Workload is (re)created");
    return;
  }
  if (stale_with_quota || deleting || deleting_now) {
    // The new Workload waits for the old ones to be gone: it may even have the same name.
    Hold(d, "WorkloadOutdated", "waiting for the job's outdated Workload to be deleted");
    for (const WorkloadView& w : observed.workloads) {
      if (!w.deleting && w.IsTrue(kQuotaReserved)) {
        d.writes.push_back({WorkloadWrite::Kind::kDelete, w.name, w.uid, nullptr});
      }
    }
    return;
  }
  if (!observed.priority) {
    Hold(d, "PriorityClassNotFound", observed.priority_error);
    return;
  }
  d.workload = WorkloadName(job);
  d.writes.push_back({WorkloadWrite::Kind::kCreate, d.workload, "",
                      BuildWorkload(job, *observed.priority)});
  Hold(d, "WorkloadCreated",
       "created Workload " + d.workload + " in LocalQueue " + QueueName(job) +
           "; waiting for Kueue to admit it");
}

// Kueue's own words for a Workload it has not admitted.
std::pair<std::string, std::string> PendingReasonWords(const WorkloadView& w) {
  const std::string where = "LocalQueue " + w.queue_name;
  if (!w.active) return {"Inactive", "the Workload is inactive (the job is suspended)"};
  if (w.IsTrue(kQuotaReserved)) {
    return {"QuotaReserved", "quota reserved in ClusterQueue " +
                                 (w.admission ? w.admission->cluster_queue : std::string("?")) +
                                 "; waiting for its admission checks"};
  }
  if (const WorkloadCondition* q = w.Find(kQuotaReserved); q != nullptr && !q->message.empty()) {
    return {q->reason.empty() ? "Pending" : q->reason, where + ": " + q->message};
  }
  return {"Pending", "waiting in " + where + " for Kueue to admit Workload " + w.name};
}

bool Waiting(const WorkloadView& w) {
  return !w.deleting && w.active && !w.IsTrue(kQuotaReserved) && !w.IsTrue(kFinished);
}

std::string Ordinal(int n) {
  const int tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

// Why Kueue has not admitted the Workload yet, in its own words, and where it stands.
std::pair<std::string, std::string> PendingReason(const WorkloadView& w,
                                                  const std::vector<WorkloadView>& neighbours) {
  auto [reason, message] = PendingReasonWords(w);
  // Alone in the queue, "1st of 1" would say nothing.
  if (std::optional<std::pair<int, int>> place = QueuePosition(w, neighbours);
      place && place->second > 1) {
    message += " (" + Ordinal(place->first) + " of " + std::to_string(place->second) +
               " TrainingJobs waiting in LocalQueue " + w.queue_name + ")";
  }
  return {reason, message};
}
// Evicted=True: stop the pods; once they are gone, give the quota back so Kueue can requeue.
void Evicted(const WorkloadView& w, const WorkloadCondition& evicted, const JobFacts& facts,
             const std::string& now, Decision& d) {
  Hold(d, "Evicted", "evicted by Kueue (" + evicted.reason + "): " + evicted.message);
  if (!w.IsTrue(kQuotaReserved) || facts.pods_existing > 0) return;
  // Kueue requeues at once only after a preemption or lost nodes; otherwise (PodsReady timeout,
  // deactivation) its own backoff decides.
  const bool requeue = evicted.reason == "Preempted" || evicted.reason == "NodeFailures";
  AddStatusWrite(d, w,
                 {{std::string(kRequeued), requeue ? "True" : "False", evicted.reason,
                   evicted.message},
                  {std::string(kQuotaReserved), "False", "Pending", evicted.message},
                  {std::string(kAdmitted), "False", "NoReservation",
                   "The workload has no reservation"}},
                 /*clear_admission=*/true, now);
}

}  // namespace

std::optional<std::pair<int, int>> QueuePosition(const WorkloadView& mine,
                                                 const std::vector<WorkloadView>& neighbours) {
  if (!Waiting(mine)) return std::nullopt;
  int ahead = 0;
  int waiting = 1;
  for (const WorkloadView& other : neighbours) {
    if (other.uid == mine.uid || other.queue_name != mine.queue_name || !Waiting(other)) continue;
    ++waiting;
    // RFC 3339 timestamps of one format order as strings; the name breaks a tie, as a stable
    // stand-in for Kueue's own tie-break.
    const bool first = other.priority != mine.priority ? other.priority > mine.priority
                       : other.creation_timestamp != mine.creation_timestamp
                           ? other.creation_timestamp < mine.creation_timestamp
                           : other.name < mine.name;
    ahead += first;
  }
  return std::make_pair(ahead + 1, waiting);
}

std::pair<std::string, std::string> PodsReadyFor(const WorkloadView& w, bool pods_ready) {
  const WorkloadCondition* current = w.Find(kPodsReady);
  if (!w.IsTrue(kAdmitted)) return {"False", "WaitForStart"};
  if (pods_ready) {
    const bool recovering = current != nullptr && (current->reason == "WaitForRecovery" ||
                                                   current->reason == "Recovered");
    return {"True", recovering ? "Recovered" : "Started"};
  }
  if (current == nullptr) return {"False", "WaitForStart"};
  if (current->status == "True" || current->reason == "WaitForRecovery") {
    return {"False", "WaitForRecovery"};
  }
  return {"False", "WaitForStart"};
}

bool MatchesJob(const WorkloadView& w, const api::TrainingJob& job) {
  const std::vector<PodSetShape> sets = PodSetsOf(job);
  if (sets.size() != w.pod_set_counts.size() || !w.pod_sets.is_array() ||
      w.pod_sets.size() != sets.size()) {
    return false;
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    if (sets[i].name != w.pod_set_counts[i].first || sets[i].count != w.pod_set_counts[i].second) {
      return false;
    }
    const json& stored = w.pod_sets[i];
    if (ResourcesOf(stored.is_object() ? stored.value("template", json::object()) : json()) !=
        ResourcesOf(sets[i].pod_template)) {
      return false;
    }
  }
  return true;
}

Decision Decide(const api::TrainingJob& job, const KueueObservation& observed,
                const JobFacts& facts, const std::string& now) {
  Decision d;
  if (!observed.synced) {
    Hold(d, "WaitingForKueueCache",
         "waiting for the operator's cache of Kueue Workloads to sync (is Kueue installed?)");
    return d;
  }
  const WorkloadView* w = ChooseWorkload(job, observed, d);
  if (facts.finished) {
    d.run = true;  // nothing is held: the job's own end decides what happens to its pods
    if (w != nullptr && !w->IsTrue(kFinished)) {
      AddStatusWrite(d, *w,
                     {{std::string(kFinished), "True",
                       facts.finished->succeeded ? "Succeeded" : "Failed",
                       facts.finished->message}},
                     false, now);
    }
    return d;
  }
  if (w == nullptr) {
    CreateWorkload(job, observed, facts, d);
    return d;
  }
  d.workload = w->name;
  if (w->active == facts.suspended) {
    d.writes.push_back({WorkloadWrite::Kind::kPatchSpec, w->name, w->uid,
                        {{"metadata", {{"resourceVersion", w->resource_version}}},
                         {"spec", {{"active", !facts.suspended}}}}});
  }
  if (const WorkloadCondition* ev = w->Find(kEvicted); ev != nullptr && ev->status == "True") {
    Evicted(*w, *ev, facts, now, d);
    return d;
  }
  auto [ready_status, ready_reason] = PodsReadyFor(*w, facts.pods_ready);
  const bool all_ready = ready_status == "True";
  AddStatusWrite(d, *w,
                 {{std::string(kPodsReady), ready_status, ready_reason,
                   all_ready ? "All pods reached readiness and the workload is running"
                             : "Not all pods are ready or succeeded"}},
                 false, now);
  if (!w->IsTrue(kAdmitted)) {
    auto [reason, message] = PendingReason(*w, observed.neighbours);
    if (facts.pods_existing > 0) message += "; stopping the pods it runs unadmitted";
    Hold(d, reason, message);
    return d;
  }
  StatusOr<std::map<std::string, api::RolePlacement>> placements = PlacementsOf(*w, observed.flavors);
  if (!placements.ok()) {
    Hold(d, "AdmissionUnusable", placements.status().message());
    return d;
  }
  d.run = true;
  d.admitted = true;
  d.placements = std::move(placements).value();
  d.reason = "Admitted";
  d.message = "admitted by ClusterQueue " + w->admission->cluster_queue + " (Workload " +
              w->name + ")";
  return d;
}

}  // namespace lockstep::kueue
