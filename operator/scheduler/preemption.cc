#include "operator/scheduler/preemption.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace lockstep::scheduler {
namespace {

// One candidate's pods resolved to snapshot nodes (resolved lazily: most candidates of a large
// cluster are never looked at).
struct Candidate {
  size_t index = 0;  // into `running`
  std::optional<std::vector<std::pair<NodeIndex, const Resources*>>> pods;
};

class VictimSearch {
 public:
  VictimSearch(const Snapshot& snapshot, const GangRequest& preemptor,
               const std::vector<RunningGang>& running)
      : snapshot_(snapshot), preemptor_(preemptor), running_(running) {}

  PreemptionPlan Run();

 private:
  void PrepareBound();
  bool MayFit(const Snapshot& s) const;
  // PlaceGang, skipped when MayFit already says no (placement_ is set when it fits).
  bool Fits(const Snapshot& s, Placement* placement) const {
    if (!MayFit(s)) return false;
    Placement p = PlaceGang(s, preemptor_);
    if (!p.placed()) return false;
    *placement = std::move(p);
    return true;
  }
  void OrderCandidates();
  const std::vector<std::pair<NodeIndex, const Resources*>>& Pods(Candidate& c);
  void Evict(Snapshot& s, Candidate& c) {
    for (const auto& [node, requests] : Pods(c)) s.Release(node, *requests);
  }
  void PutBack(Snapshot& s, Candidate& c) {
    for (const auto& [node, requests] : Pods(c)) s.Assume(node, *requests);
  }
  bool FindFittingPrefix();
  void ReprieveUntouched();
  void ReprieveOneByOne();

  const Snapshot& snapshot_;
  const GangRequest& preemptor_;
  const std::vector<RunningGang>& running_;
  std::vector<Candidate> candidates_;  // eviction preference order
  // The cheap bound: what the preemptor asks in total per resource, and the domains it must fit
  // into one of (requiredTopologyKey) when it has one.
  std::vector<std::pair<ResourceId, int64_t>> demand_;
  bool unknown_resource_ = false;  // a resource no node has: PlaceGang never places it
  std::optional<DomainIndex> required_domains_;
  // The search state: victims_ are positions in candidates_ (preference order), `evicted_` the
  // snapshot without them, `placement_` the preemptor's placement there.
  std::vector<size_t> victims_;
  std::optional<Snapshot> evicted_;
  Placement placement_;
};

void VictimSearch::OrderCandidates() {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].priority < preemptor_.priority) candidates_.push_back({i, std::nullopt});
  }
  std::sort(candidates_.begin(), candidates_.end(), [this](const Candidate& a, const Candidate& b) {
    const RunningGang& x = running_[a.index];
    const RunningGang& y = running_[b.index];
    // Lowest priority first, then youngest (latest start) first, then key.
    return std::tie(x.priority, y.start_time, x.job_key) <
           std::tie(y.priority, x.start_time, y.job_key);
  });
}

void VictimSearch::PrepareBound() {
  // Each pod takes one "pods" slot (Snapshot::Assume); a pod naming "pods" itself is left out of
  // the bound rather than guessed at.
  std::map<std::string, int64_t> total;
  for (const Role& role : preemptor_.roles) {
    for (const PodRequest& pod : role.pods) {
      for (const auto& [name, amount] : pod.requests.entries()) {
        if (name != kPods) total[name] += amount;
      }
      if (pod.requests.Get(kPods) == 0) ++total[std::string(kPods)];
    }
  }
  for (const auto& [name, amount] : total) {
    if (amount <= 0) continue;
    if (auto r = snapshot_.FindResource(name)) {
      demand_.emplace_back(*r, amount);
    } else {
      unknown_resource_ = true;
    }
  }
  if (!preemptor_.required_topology_key.empty()) {
    const DomainIndex* index = snapshot_.Domains(preemptor_.required_topology_key);
    required_domains_ =
        index != nullptr ? *index : snapshot_.BuildDomainIndex(preemptor_.required_topology_key);
  }
}

// A necessary condition for PlaceGang to place the preemptor, at a fraction of its cost: the free
// capacity (over every node, or within the best single required domain) covers the total demand
// of each resource. PlaceGang never places beyond free capacity, so "no" here is its "no" too;
// most candidate sets the search tries fail this way.
bool VictimSearch::MayFit(const Snapshot& s) const {
  if (unknown_resource_) return false;
  for (const auto& [r, amount] : demand_) {
    if (!required_domains_) {
      int64_t free = 0;
      for (NodeIndex n = 0; n < s.size() && free < amount; ++n)
        free += std::max<int64_t>(0, s.Free(n, r));
      if (free < amount) return false;
      continue;
    }
    std::vector<int64_t> free(required_domains_->values.size(), 0);
    bool enough = false;
    for (NodeIndex n = 0; n < s.size() && !enough; ++n) {
      const int32_t d = required_domains_->of_node[n];
      if (d == DomainIndex::kUnlabeled) continue;
      free[static_cast<size_t>(d)] += std::max<int64_t>(0, s.Free(n, r));
      enough = free[static_cast<size_t>(d)] >= amount;
    }
    if (!enough) return false;
  }
  return true;
}

const std::vector<std::pair<NodeIndex, const Resources*>>& VictimSearch::Pods(Candidate& c) {
  if (!c.pods) {
    c.pods.emplace();
    for (const RunningPod& pod : running_[c.index].pods) {
      if (auto node = snapshot_.Find(pod.node)) c.pods->emplace_back(*node, &pod.requests);
    }
  }
  return *c.pods;
}

// The shortest prefix of candidates_ whose eviction makes the preemptor fit: gallop (1, 3, 7, ...
// candidates) until it fits, then bisect between the last failing and the first fitting length.
// Placement is greedy, so "fits" is not strictly monotone in the prefix; the result always fits,
// and the reprieve passes that follow make it minimal whatever the prefix.
bool VictimSearch::FindFittingPrefix() {
  Snapshot lo = snapshot_;  // the first `lo_len` candidates evicted; does not fit
  size_t lo_len = 0;
  size_t hi_len = 0;
  std::optional<Snapshot> hi;
  for (size_t step = 1; lo_len < candidates_.size(); step *= 2) {
    const size_t len = std::min(candidates_.size(), lo_len + step);
    Snapshot s = lo;
    for (size_t i = lo_len; i < len; ++i) Evict(s, candidates_[i]);
    if (Fits(s, &placement_)) {
      hi_len = len;
      hi = std::move(s);
      break;
    }
    lo = std::move(s);
    lo_len = len;
  }
  if (!hi) return false;
  while (hi_len - lo_len > 1) {
    const size_t mid = lo_len + (hi_len - lo_len) / 2;
    Snapshot s = lo;
    for (size_t i = lo_len; i < mid; ++i) Evict(s, candidates_[i]);
    if (Fits(s, &placement_)) {
      hi_len = mid;
      hi = std::move(s);
    } else {
      lo = std::move(s);
      lo_len = mid;
    }
  }
  for (size_t i = 0; i < hi_len; ++i) victims_.push_back(i);
  evicted_ = std::move(hi);
  return true;
}

// Victims with no pod on a node the preemptor's placement uses: putting them all back leaves
// that placement valid, so one check usually reprieves most of a long prefix at once (a
// topology-constrained preemptor needs one domain emptied, not everything before it in order).
void VictimSearch::ReprieveUntouched() {
  std::set<NodeIndex> used;
  for (const PodAssignment& a : placement_.assignments) used.insert(a.node);
  std::vector<size_t> keep;
  std::vector<size_t> back;
  for (size_t v : victims_) {
    const auto& pods = Pods(candidates_[v]);
    const bool touches = std::any_of(pods.begin(), pods.end(),
                                     [&](const auto& pod) { return used.count(pod.first) != 0; });
    (touches ? keep : back).push_back(v);
  }
  if (back.empty() || keep.empty()) return;
  Snapshot s = *evicted_;
  for (size_t v : back) PutBack(s, candidates_[v]);
  // The greedy engine may choose differently and fail: then the one-by-one pass decides.
  if (!Fits(s, &placement_)) return;
  victims_ = std::move(keep);
  evicted_ = std::move(s);
}

// Most valuable victim first (the end of the preference order): put it back when the preemptor
// still fits without its capacity. Repeated until a whole pass reprieves nobody, so at the end
// every remaining victim was checked against the final set: none can be dropped. The check runs
// in place (put back, then evict again when it does not fit: exact, as nothing clamps right
// after the put-back), so a reprieve costs no snapshot copy.
void VictimSearch::ReprieveOneByOne() {
  for (bool changed = true; changed && victims_.size() > 1;) {
    changed = false;
    for (size_t k = victims_.size(); k-- > 0 && victims_.size() > 1;) {
      Candidate& c = candidates_[victims_[k]];
      PutBack(*evicted_, c);
      if (!Fits(*evicted_, &placement_)) {
        Evict(*evicted_, c);
        continue;
      }
      victims_.erase(victims_.begin() + static_cast<std::ptrdiff_t>(k));
      changed = true;
    }
  }
}

PreemptionPlan VictimSearch::Run() {
  PreemptionPlan plan;
  if (preemptor_.preemption_policy == PreemptionPolicy::kNever) {
    plan.message = "its PriorityClass has preemptionPolicy Never";
    return plan;
  }
  PrepareBound();
  if (Fits(snapshot_, &placement_)) {
    plan.message = "it fits without evicting anything";
    return plan;
  }
  OrderCandidates();
  if (candidates_.empty()) {
    plan.message =
        "no running gang has a lower priority than " + std::to_string(preemptor_.priority);
    return plan;
  }
  if (!FindFittingPrefix()) {
    plan.message = "evicting all " + std::to_string(candidates_.size()) +
                   " lower-priority gangs would still not make it fit";
    return plan;
  }
  ReprieveUntouched();
  ReprieveOneByOne();
  for (size_t v : victims_) plan.victims.push_back(candidates_[v].index);
  plan.placement = std::move(placement_);
  return plan;
}

}  // namespace

PreemptionPlan ChooseVictims(const Snapshot& snapshot, const GangRequest& preemptor,
                             const std::vector<RunningGang>& running) {
  return VictimSearch(snapshot, preemptor, running).Run();
}

Snapshot WithoutGangs(const Snapshot& snapshot, const std::vector<RunningGang>& running,
                      const std::vector<size_t>& victims) {
  Snapshot out = snapshot;
  for (size_t v : victims) {
    for (const RunningPod& pod : running[v].pods) {
      if (auto node = snapshot.Find(pod.node)) out.Release(*node, pod.requests);
    }
  }
  return out;
}

}  // namespace lockstep::scheduler
