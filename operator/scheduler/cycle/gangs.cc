#include "operator/scheduler/cycle/gangs.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <utility>

#include "common/log.h"
#include "operator/api/children.h"
#include "operator/scheduler/cycle/convert.h"

namespace lockstep::scheduler {
namespace {

std::string Label(const kube::Pod& pod, std::string_view key) {
  auto it = pod.meta.labels.find(std::string(key));
  return it == pod.meta.labels.end() ? std::string() : it->second;
}

int32_t ReplicaIndex(const kube::Pod& pod) {
  const std::string text = Label(pod, api::kLabelReplicaIndex);
  int32_t value = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return -1;
  return value;
}

// Workers first, then the job's extra roles in spec order, then anything else by name: a stable
// gang order, so replica indexes of the first role land first in topology order.
int RoleRank(const JobInfo& job, const std::string& role) {
  if (role == api::kWorkerRole) return 0;
  for (size_t i = 0; i < job.spec.roles.size(); ++i) {
    if (job.spec.roles[i].name == role) return static_cast<int>(i) + 1;
  }
  return static_cast<int>(job.spec.roles.size()) + 1;
}

// A gang is ranked by what the apiserver admitted for its pods (spec.priority, set from the
// class the pod names), never by the job's spec.priorityClassName: a job cannot claim more than
// its pods carry (issue 44). Admission now refuses a template whose class differs from the job's,
// but a job stored before that rule may still have one. Asking, a gang is as strong as its
// weakest pod; as a victim, as its strongest, since kube-scheduler would not evict a pod for a
// preemptor of equal or lower priority either.
int32_t WeakestPodPriority(const std::vector<PodPtr>& pods) {
  int32_t weakest = pods.empty() ? 0 : pods.front()->priority;
  for (const PodPtr& pod : pods) weakest = std::min(weakest, pod->priority);
  return weakest;
}

int32_t StrongestPodPriority(const std::vector<PodPtr>& pods) {
  int32_t strongest = pods.empty() ? 0 : pods.front()->priority;
  for (const PodPtr& pod : pods) strongest = std::max(strongest, pod->priority);
  return strongest;
}

// Any pod whose class says preemptionPolicy: Never keeps the whole gang from preempting.
bool AnyPodNeverPreempts(const std::vector<PodPtr>& pods, const CollectInputs& inputs) {
  if (!inputs.never_preempts) return false;
  return std::any_of(pods.begin(), pods.end(), [&](const PodPtr& pod) {
    return inputs.never_preempts(pod->priority_class_name);
  });
}

std::chrono::system_clock::time_point CreationTime(const kube::ObjectMeta& meta) {
  StatusOr<std::chrono::system_clock::time_point> t = kube::ParseTime(meta.creation_timestamp);
  return t.ok() ? *t : std::chrono::system_clock::time_point{};
}

// Builds the request for one group of pods; false when the group is not a complete gang.
bool BuildGang(const std::string& key, std::vector<PodPtr> pods, const JobPtr& job,
               const CollectInputs& inputs, CollectedGang* out) {
  // Pods of an earlier job with the same name are not this job's gang.
  for (const PodPtr& pod : pods) {
    const kube::OwnerRef* owner = pod->meta.ControllerRef();
    if (owner != nullptr && owner->uid != job->meta.uid) return false;
  }
  if (static_cast<int64_t>(pods.size()) != ExpectedPodCount(*job)) return false;
  std::set<std::pair<std::string, int32_t>> seen;
  for (const PodPtr& pod : pods) {
    const int32_t index = ReplicaIndex(*pod);
    if (index < 0 || !seen.emplace(Label(*pod, api::kLabelRole), index).second) return false;
  }
  SortGangOrder(*job, pods);
  out->key = key;
  out->job = job;
  out->request = RequestFor(*job, pods, WeakestPodPriority(pods), inputs.now, &out->pods);
  if (AnyPodNeverPreempts(pods, inputs)) out->request.preemption_policy = PreemptionPolicy::kNever;
  return true;
}

// Replacement hot spares (docs/failures.md "Hot spares"): pending spare pods alone while the
// rest of the attempt is bound. They are placed by themselves, under the job's topology rules and
// exclusions, never held back for a gang that is already running (nor undone as its leftover).
bool IsSpareRefill(const JobInfo& job, const std::vector<PodPtr>& pending,
                   const std::vector<PodPtr>& bound) {
  if (job.spec.failure_policy.spare_replicas <= 0 || bound.empty()) return false;
  for (const PodPtr& pod : pending) {
    const kube::OwnerRef* owner = pod->meta.ControllerRef();
    if (owner == nullptr || owner->uid != job.meta.uid) return false;
    if (Label(*pod, api::kLabelRole) != api::kSpareRole || ReplicaIndex(*pod) < 0) return false;
  }
  return true;
}

// Where a group of pending pods stands against the attempt the job's status names.
enum class AttemptMatch { kCurrent, kOlder, kNewer };

AttemptMatch MatchAttempt(const kube::Pod& pod, const JobInfo& job) {
  const std::optional<int32_t> attempt = PodAttempt(pod);
  // No usable label: not a pod of any attempt the controller made; never a member.
  if (!attempt || *attempt < job.status_attempt) return AttemptMatch::kOlder;
  return *attempt == job.status_attempt ? AttemptMatch::kCurrent : AttemptMatch::kNewer;
}

}  // namespace

std::optional<int32_t> PodAttempt(const kube::Pod& pod) {
  const std::string text = Label(pod, api::kLabelAttempt);
  int32_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

void SortGangOrder(const JobInfo& job, std::vector<PodPtr>& pods) {
  std::sort(pods.begin(), pods.end(), [&](const PodPtr& a, const PodPtr& b) {
    const std::string ra = Label(*a, api::kLabelRole), rb = Label(*b, api::kLabelRole);
    const int ka = RoleRank(job, ra), kb = RoleRank(job, rb);
    if (ka != kb) return ka < kb;
    if (ra != rb) return ra < rb;
    return ReplicaIndex(*a) < ReplicaIndex(*b);
  });
}

GangRequest RequestFor(const JobInfo& job, const std::vector<PodPtr>& pods, int32_t priority,
                       api::Time now, std::vector<std::vector<PodPtr>>* by_role) {
  GangRequest req;
  req.job_key = job.meta.Key();
  req.priority = priority;
  req.creation_time = CreationTime(job.meta);
  if (job.spec.placement) {
    req.topology_keys = job.spec.placement->topology_keys;
    req.required_topology_key = job.spec.placement->required_topology_key.value_or("");
  }
  req.excluded_nodes = ExcludedNodes(job, now);
  for (const PodPtr& pod : pods) {
    const std::string role = Label(*pod, api::kLabelRole);
    if (req.roles.empty() || req.roles.back().name != role) {
      req.roles.push_back({role, {}});
      if (by_role != nullptr) by_role->emplace_back();
    }
    req.roles.back().pods.push_back(ToPodRequest(*pod));
    if (by_role != nullptr) by_role->back().push_back(pod);
  }
  return req;
}

namespace {

// Ours, alive, in the namespace and labelled with a job: a gang member, bound or not.
bool IsMemberFor(const kube::Pod& pod, const CollectOptions& options) {
  if (pod.scheduler_name != options.scheduler_name) return false;
  if (pod.meta.deletion_timestamp || pod.IsTerminal()) return false;
  if (!options.namespace_filter.empty() && pod.meta.namespace_ != options.namespace_filter) {
    return false;
  }
  return pod.meta.labels.count(std::string(api::kLabelJobName)) != 0;
}

std::string GroupKey(const kube::Pod& pod) {
  return pod.meta.namespace_ + "/" + Label(pod, api::kLabelJobName) + "/" +
         Label(pod, api::kLabelAttempt);
}

// The bound members of a split gang of `job` whose pending members are `pending`, or empty.
std::vector<PodPtr> LeftoverBound(const JobInfo& job, const std::vector<PodPtr>& pending,
                                  const std::vector<PodPtr>& bound) {
  if (bound.empty() ||
      static_cast<int64_t>(pending.size() + bound.size()) != ExpectedPodCount(job)) {
    return {};
  }
  for (const PodPtr& pod : bound) {
    const kube::OwnerRef* owner = pod->meta.ControllerRef();
    if (owner == nullptr || owner->uid != job.meta.uid) return {};
  }
  return bound;
}

}  // namespace

bool IsPendingFor(const kube::Pod& pod, const CollectOptions& options) {
  return pod.node_name.empty() && IsMemberFor(pod, options);
}

bool IsBoundFor(const kube::Pod& pod, const CollectOptions& options) {
  return !pod.node_name.empty() && IsMemberFor(pod, options);
}

GangCollection CollectGangs(const std::vector<PodPtr>& pods, const CollectInputs& inputs,
                            const CollectOptions& options) {
  std::map<std::string, std::vector<PodPtr>> groups;
  std::map<std::string, std::vector<PodPtr>> bound;  // by the same key
  for (const PodPtr& pod : pods) {
    if (IsPendingFor(*pod, options)) groups[GroupKey(*pod)].push_back(pod);
    if (IsBoundFor(*pod, options)) bound[GroupKey(*pod)].push_back(pod);
  }
  GangCollection out;
  for (auto& [key, members] : groups) {
    if (inputs.in_flight(key)) continue;
    const kube::Pod& first = *members.front();
    JobPtr job = inputs.find_job(first.meta.namespace_ + "/" + Label(first, api::kLabelJobName));
    // Every member shares the attempt label (it is part of the key), so the first one speaks for
    // the group. An older attempt's pods are leftovers of a restart, whatever their number.
    const AttemptMatch attempt =
        job == nullptr ? AttemptMatch::kCurrent : MatchAttempt(first, *job);
    if (attempt == AttemptMatch::kOlder) {
      ++out.stale;
      continue;
    }
    CollectedGang gang;
    if (job != nullptr && attempt == AttemptMatch::kCurrent && !job->meta.deletion_timestamp &&
        !job->spec.run_policy.suspend && IsSpareRefill(*job, members, bound[key])) {
      SortGangOrder(*job, members);
      gang.key = key;
      gang.job = job;
      gang.request = RequestFor(*job, members, WeakestPodPriority(members), inputs.now, &gang.pods);
      // A spare never preempts anybody: the job runs already.
      gang.request.preemption_policy = PreemptionPolicy::kNever;
      out.complete.push_back(std::move(gang));
      continue;
    }
    if (job == nullptr || attempt == AttemptMatch::kNewer || job->meta.deletion_timestamp ||
        job->spec.run_policy.suspend || !BuildGang(key, members, job, inputs, &gang)) {
      ++out.incomplete;
      if (job != nullptr && attempt == AttemptMatch::kCurrent && !job->meta.deletion_timestamp &&
          !job->spec.run_policy.suspend) {
        std::vector<PodPtr> split = LeftoverBound(*job, members, bound[key]);
        if (!split.empty()) out.leftovers.push_back({key, job, std::move(split)});
      }
      continue;
    }
    out.complete.push_back(std::move(gang));
  }
  return out;
}

namespace {

// A group of `key` is a whole running gang of `job`: every expected pod, all owned by the job.
bool IsWholeRunningGang(const JobInfo& job, const std::vector<PodPtr>& members) {
  if (static_cast<int64_t>(members.size()) != ExpectedPodCount(job)) return false;
  return std::all_of(members.begin(), members.end(), [&](const PodPtr& pod) {
    const kube::OwnerRef* owner = pod->meta.ControllerRef();
    return owner != nullptr && owner->uid == job.meta.uid;
  });
}

}  // namespace

RunningGangs CollectRunningGangs(const std::vector<PodPtr>& pods, const CollectInputs& inputs,
                                 const CollectOptions& options) {
  std::map<std::string, std::vector<PodPtr>> bound;
  std::set<std::string> not_whole;  // a member pending, terminating or finished
  for (const PodPtr& pod : pods) {
    if (pod->scheduler_name != options.scheduler_name ||
        pod->meta.labels.count(std::string(api::kLabelJobName)) == 0) {
      continue;
    }
    if (IsBoundFor(*pod, options)) {
      bound[GroupKey(*pod)].push_back(pod);
    } else {
      not_whole.insert(GroupKey(*pod));
    }
  }
  RunningGangs out;
  for (auto& [key, members] : bound) {
    if (not_whole.count(key) != 0 || (inputs.in_flight && inputs.in_flight(key))) continue;
    const kube::Pod& first = *members.front();
    JobPtr job = inputs.find_job(first.meta.namespace_ + "/" + Label(first, api::kLabelJobName));
    if (job == nullptr || job->meta.deletion_timestamp || job->spec.run_policy.suspend ||
        MatchAttempt(first, *job) != AttemptMatch::kCurrent || !IsWholeRunningGang(*job, members)) {
      continue;
    }
    RunningGang gang;
    gang.job_key = job->meta.Key();
    gang.priority = StrongestPodPriority(members);
    for (const PodPtr& pod : members) {
      gang.start_time = std::max(gang.start_time, CreationTime(pod->meta));
      gang.pods.push_back({pod->node_name, RequestsFromMilli(pod->requests)});
    }
    out.gangs.push_back(std::move(gang));
    out.jobs.push_back(job);
    out.keys.push_back(key);
    out.pods.push_back(members);
  }
  return out;
}

}  // namespace lockstep::scheduler
