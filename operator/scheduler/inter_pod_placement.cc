// PlacementEngine's one-by-one path (placement_engine.h): a gang with inter-pod constraints
// (required pod affinity and anti-affinity, DoNotSchedule topology spread, host ports), or one
// that a bound pod's anti-affinity selects, is placed a pod at a time, each pod seeing the
// cluster's pods and the gang's pods placed before it, which is what kube-scheduler's filters
// see when it binds the same pods in turn (pod_constraints.h has the rules). The capacity-only
// path (shapes and per-node fit counts) stays for every other gang, so the common case costs
// nothing more.
//
// The gang's own podAffinity terms: a term that selects no bound pod but some pod of the gang
// (typically its own pods, "all workers in one zone") is met by putting the whole gang in one
// domain of the term's key, which is what the first-pod rule of kube-scheduler leads to when
// the pods come one after the other: the first lands anywhere, the rest must join it.

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "operator/scheduler/placement_engine.h"
#include "operator/scheduler/pod_constraints.h"
#include "operator/scheduler/volumes.h"

namespace lockstep::scheduler::internal {
namespace {

// Pods a term selects (bound, then the gang's as placed), per domain of its topology key.
struct TermCount {
  PodAffinityTerm term;
  std::string owner_namespace;
  const DomainIndex* domains = nullptr;
  std::vector<int64_t> count;  // per domain
  int64_t total = 0;
  bool deferred = false;  // an affinity term met by the hard level (see the file comment)
};

// A placed pod's anti-affinity term: no pod it selects may join a domain it occupies.
struct AntiHolder {
  PodAffinityTerm term;
  std::string owner_namespace;
  const DomainIndex* domains = nullptr;
  std::vector<int64_t> occupied;  // per domain: pods carrying the term
};

// One shape's DoNotSchedule constraint: pods counted on the nodes the shape's nodeSelector and
// required node affinity admit (nodeAffinityPolicy Honor), taints ignored (nodeTaintsPolicy
// Ignore), as kube-scheduler's defaults do.
struct SpreadCount {
  SpreadConstraint constraint;
  std::string ns;
  const DomainIndex* domains = nullptr;
  std::vector<char> eligible_domain;
  int64_t eligible_domains = 0;
  std::vector<int64_t> count;  // per domain, eligible nodes only
  int64_t min = 0;             // over eligible domains
};

struct ShapeTerms {
  std::vector<size_t> affinity;  // TermCount
  std::vector<size_t> anti;      // TermCount
  std::vector<size_t> holders;   // AntiHolder of its own anti-affinity terms
  std::vector<size_t> spread;    // SpreadCount
};

template <typename T, typename Same>
size_t FindOrAdd(std::vector<T>& list, Same same, T value) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (same(list[i])) return i;
  }
  list.push_back(std::move(value));
  return list.size() - 1;
}

bool Labeled(int32_t d) { return d != DomainIndex::kUnlabeled; }

std::string DescribePorts(const std::vector<HostPort>& ports) {
  std::string out;
  for (const HostPort& p : ports) {
    if (!out.empty()) out += ", ";
    out += std::to_string(p.port) + "/" + (p.protocol.empty() ? "TCP" : p.protocol);
    if (!p.ip.empty() && p.ip != "0.0.0.0") out += " on " + p.ip;
  }
  return out;
}

std::string DescribeKeys(const std::vector<PodAffinityTerm>& terms) {
  std::string out;
  for (const PodAffinityTerm& t : terms) {
    if (out.find(t.topology_key) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += t.topology_key;
  }
  return out;
}

// The one-by-one search's state. Counts change as pods are placed and are undone when an
// attempt in one hard domain fails, through an undo log (no copy per attempt).
class OneByOne {
 public:
  OneByOne(const Snapshot& snapshot, const GangRequest& gang, const std::vector<Shape>& shapes,
           const std::function<const DomainIndex*(const std::string&)>& index_for)
      : snapshot_(snapshot), gang_(gang), shapes_(shapes) {
    BuildTerms(index_for);
    CountBoundPods();
    DeferGangAffinity();
  }

  std::vector<std::string> HardKeys() const {
    std::vector<std::string> keys;
    for (const TermCount& t : counts_) {
      if (t.deferred && std::find(keys.begin(), keys.end(), t.term.topology_key) == keys.end()) {
        keys.push_back(t.term.topology_key);
      }
    }
    return keys;
  }

  const std::vector<ShapeTerms>& terms() const { return terms_; }
  std::vector<TermCount>& counts() { return counts_; }
  std::vector<AntiHolder>& holders() { return holders_; }
  std::vector<SpreadCount>& spreads() { return spreads_; }
  const std::vector<HostPort>* BoundPorts(NodeIndex n) const {
    auto it = ports_.find(n);
    return it == ports_.end() ? nullptr : &it->second;
  }
  std::vector<HostPort>& GangPorts(NodeIndex n) { return gang_ports_[n]; }
  bool Eligible(size_t spread, NodeIndex n) const { return eligible_node_[spread][n] != 0; }

  // Undo log: every count changed during an attempt.
  void Set(int64_t& slot, int64_t value) {
    undo_.emplace_back(&slot, slot);
    slot = value;
  }
  size_t Mark() const { return undo_.size(); }
  void UndoTo(size_t mark) {
    while (undo_.size() > mark) {
      *undo_.back().first = undo_.back().second;
      undo_.pop_back();
    }
  }

 private:
  void BuildTerms(const std::function<const DomainIndex*(const std::string&)>& index_for) {
    terms_.resize(shapes_.size());
    for (size_t s = 0; s < shapes_.size(); ++s) {
      const PodRequest& pod = *shapes_[s].pod;
      auto count_index = [&](const PodAffinityTerm& term) {
        const DomainIndex* domains = index_for(term.topology_key);
        return FindOrAdd(
            counts_,
            [&](const TermCount& t) {
              return t.term == term && t.owner_namespace == pod.namespace_;
            },
            TermCount{term, pod.namespace_, domains,
                      std::vector<int64_t>(domains->values.size(), 0), 0, false});
      };
      for (const PodAffinityTerm& term : pod.constraints.affinity) {
        terms_[s].affinity.push_back(count_index(term));
      }
      for (const PodAffinityTerm& term : pod.constraints.anti_affinity) {
        terms_[s].anti.push_back(count_index(term));
        terms_[s].holders.push_back(HolderIndex(term, pod.namespace_, index_for));
      }
      for (const SpreadConstraint& c : pod.constraints.spread) {
        terms_[s].spread.push_back(spreads_.size());
        spreads_.push_back(MakeSpread(c, pod, index_for(c.topology_key)));
      }
    }
    snapshot_.ForEachPod([&](NodeIndex n, const BoundPod& bound) {
      if (!bound.host_ports.empty()) {
        auto& ports = ports_[n];
        ports.insert(ports.end(), bound.host_ports.begin(), bound.host_ports.end());
      }
      for (const PodAffinityTerm& term : bound.anti_affinity) {
        AntiHolder& h = holders_[HolderIndex(term, bound.namespace_, index_for)];
        const int32_t d = h.domains->of_node[n];
        if (Labeled(d)) ++h.occupied[static_cast<size_t>(d)];
      }
    });
  }

  size_t HolderIndex(const PodAffinityTerm& term, const std::string& ns,
                     const std::function<const DomainIndex*(const std::string&)>& index_for) {
    for (size_t i = 0; i < holders_.size(); ++i) {
      if (holders_[i].term == term && holders_[i].owner_namespace == ns) return i;
    }
    const DomainIndex* domains = index_for(term.topology_key);
    holders_.push_back(
        AntiHolder{term, ns, domains, std::vector<int64_t>(domains->values.size(), 0)});
    return holders_.size() - 1;
  }

  SpreadCount MakeSpread(const SpreadConstraint& c, const PodRequest& pod,
                         const DomainIndex* domains) {
    SpreadCount sc{c,       pod.namespace_,
                   domains, std::vector<char>(domains->values.size(), 0),
                   0,       std::vector<int64_t>(domains->values.size(), 0),
                   0};
    eligible_node_.emplace_back(snapshot_.size(), 0);
    for (NodeIndex n = 0; n < snapshot_.size(); ++n) {
      const int32_t d = domains->of_node[n];
      const NodeInfo& node = snapshot_.node(n);
      if (!Labeled(d) || !MatchesNodeSelector(pod.node_selector, node.labels) ||
          !MatchesRequiredAffinity(pod.required_affinity, node)) {
        continue;
      }
      eligible_node_.back()[n] = 1;
      sc.eligible_domain[static_cast<size_t>(d)] = 1;
    }
    for (char e : sc.eligible_domain) sc.eligible_domains += e;
    return sc;
  }

  void CountBoundPods() {
    snapshot_.ForEachPod([&](NodeIndex n, const BoundPod& bound) {
      for (TermCount& t : counts_) {
        const int32_t d = t.domains->of_node[n];
        if (!TermMatchesPod(t.term, t.owner_namespace, bound.namespace_, bound.labels)) continue;
        ++t.total;  // a bound pod on a node without the key still counts for the first-pod rule
        if (Labeled(d)) ++t.count[static_cast<size_t>(d)];
      }
      for (size_t i = 0; i < spreads_.size(); ++i) {
        SpreadCount& sc = spreads_[i];
        const int32_t d = sc.domains->of_node[n];
        if (!eligible_node_[i][n] || bound.namespace_ != sc.ns ||
            !MatchesLabelSelector(sc.constraint.selector, bound.labels)) {
          continue;
        }
        ++sc.count[static_cast<size_t>(d)];
      }
    });
    for (SpreadCount& sc : spreads_) {
      int64_t min = std::numeric_limits<int64_t>::max();
      for (size_t d = 0; d < sc.count.size(); ++d) {
        if (sc.eligible_domain[d]) min = std::min(min, sc.count[d]);
      }
      sc.min = sc.eligible_domains == 0 ? 0 : min;
    }
  }

  // An affinity term no bound pod meets but some pod of the gang does.
  void DeferGangAffinity() {
    std::vector<bool> is_affinity(counts_.size(), false);
    for (const ShapeTerms& st : terms_) {
      for (size_t t : st.affinity) is_affinity[t] = true;
    }
    for (size_t t = 0; t < counts_.size(); ++t) {
      if (!is_affinity[t] || counts_[t].total > 0) continue;
      for (const Role& role : gang_.roles) {
        for (const PodRequest& pod : role.pods) {
          if (TermMatchesPod(counts_[t].term, counts_[t].owner_namespace, pod.namespace_,
                             pod.labels)) {
            counts_[t].deferred = true;
          }
        }
      }
    }
  }

  const Snapshot& snapshot_;
  const GangRequest& gang_;
  const std::vector<Shape>& shapes_;
  std::vector<ShapeTerms> terms_;
  std::vector<TermCount> counts_;
  std::vector<AntiHolder> holders_;
  std::vector<SpreadCount> spreads_;
  std::vector<std::vector<char>> eligible_node_;                     // per SpreadCount, per node
  std::unordered_map<NodeIndex, std::vector<HostPort>> ports_;       // bound pods'
  std::unordered_map<NodeIndex, std::vector<HostPort>> gang_ports_;  // this attempt's
  std::vector<std::pair<int64_t*, int64_t>> undo_;
};

// What one attempt learned when a pod found no node.
struct AttemptFailure {
  size_t placed = 0;
  size_t role = 0;
  size_t replica = 0;
  std::array<int64_t, kInfeasibilityCount> excluded{};
  std::vector<int64_t> claim_misses;  // per claim of the pod: nodes where it was the first to fail
};

}  // namespace

const DomainIndex* PlacementEngine::IndexFor(const std::string& key) {
  if (const DomainIndex* index = snapshot_.Domains(key)) return index;
  for (const DomainIndex& owned : owned_indexes_) {
    if (owned.key == key) return &owned;
  }
  return &owned_indexes_.emplace_back(snapshot_.BuildDomainIndex(key));
}

std::optional<Placement> PlacementEngine::WaitingClaim() const {
  for (const Role& role : gang_.roles) {
    for (size_t i = 0; i < role.pods.size(); ++i) {
      for (const ClaimNeed& need : role.pods[i].volumes) {
        if (need.state != ClaimState::kWaiting) continue;
        return Placement{{},
                         PlacementFailure::kVolumeBinding,
                         role.name + " pod " + std::to_string(i) + " waits: " +
                             DescribeClaimMiss(need, 0)};
      }
    }
  }
  return std::nullopt;
}

bool PlacementEngine::NeedsOneByOne() const {
  for (const Shape& shape : shapes_) {
    if (HasPodConstraints(*shape.pod)) return true;
  }
  // Claims differ per pod (each PV is chosen once), so such a gang goes a pod at a time too.
  for (const Role& role : gang_.roles) {
    for (const PodRequest& pod : role.pods) {
      if (!pod.volumes.empty()) return true;
    }
  }
  // A bound pod's anti-affinity term that selects a pod of the gang constrains it too.
  if (!snapshot_.any_anti_affinity()) return false;
  bool selected = false;
  snapshot_.ForEachPod([&](NodeIndex, const BoundPod& bound) {
    if (selected || bound.anti_affinity.empty()) return;
    for (const Role& role : gang_.roles) {
      for (const PodRequest& pod : role.pods) {
        for (const PodAffinityTerm& term : bound.anti_affinity) {
          if (TermMatchesPod(term, bound.namespace_, pod.namespace_, pod.labels)) selected = true;
        }
      }
    }
  });
  return selected;
}

Placement PlacementEngine::RunOneByOne(const Nodes& candidates) {
  OneByOne state(snapshot_, gang_, shapes_,
                 [this](const std::string& key) { return IndexFor(key); });
  const size_t r_count = snapshot_.resource_count();
  const bool reserve = options_.capacity == CapacityMode::kAllocatable;
  std::vector<int64_t> extra(snapshot_.size() * r_count, 0);  // this attempt's requests
  std::vector<NodeIndex> touched;
  std::vector<std::vector<int64_t>> level_count;  // per soft level, per domain: gang pods
  for (const DomainIndex* level : levels_) level_count.emplace_back(level->values.size(), 0);
  std::vector<PodAssignment> assignments;
  AttemptFailure best_failure;
  bool failed_once = false;
  // This attempt's claim choices (a claim shared by pods is chosen once) and the PVs they took.
  std::map<std::string, ClaimChoice> claim_choices;
  std::set<std::string> attempt_taken;
  auto taken = [&](const std::string& volume) {
    return snapshot_.VolumeTaken(volume) || attempt_taken.count(volume) != 0;
  };
  // Every claim of `pod` met on node n: the choices in `out`; else the first claim that is not.
  auto fit_volumes = [&](NodeIndex n, const PodRequest& pod, std::vector<ClaimChoice>* out,
                         size_t* missed) -> bool {
    const NodeInfo& node = snapshot_.node(n);
    for (size_t c = 0; c < pod.volumes.size(); ++c) {
      const ClaimNeed& need = pod.volumes[c];
      auto earlier = claim_choices.find(need.claim);
      std::optional<ClaimChoice> choice =
          FitClaim(need, node, taken, earlier == claim_choices.end() ? nullptr : &earlier->second);
      if (!choice) {
        if (missed != nullptr) *missed = c;
        return false;
      }
      // A second pod of the same claim, or a claim already bound: nothing more to write.
      if (out != nullptr && !choice->claim.empty() && earlier == claim_choices.end()) {
        out->push_back(std::move(*choice));
      }
    }
    return true;
  };
  size_t missed_claim = 0;

  auto free_after = [&](NodeIndex n, ResourceId r) {
    return Free(n, r) - extra[size_t{n} * r_count + r];
  };

  // Why node n cannot take `pod` (shape s) now, or kNone.
  auto check = [&](NodeIndex n, size_t s, const PodRequest& pod,
                   const std::vector<size_t>& matching_holders,
                   const std::vector<char>& self_spread) -> Infeasibility {
    const Shape& shape = shapes_[s];
    if (shape.reason[n] != Infeasibility::kNone) return shape.reason[n];
    if (!shape.missing_resource.empty()) return Infeasibility::kResources;
    for (const auto& [r, amount] : shape.demand) {
      if (free_after(n, r) < amount) return Infeasibility::kResources;
    }
    if (!pod.constraints.host_ports.empty()) {
      const std::vector<HostPort>* bound = state.BoundPorts(n);
      if ((bound && AnyHostPortCollides(pod.constraints.host_ports, *bound)) ||
          AnyHostPortCollides(pod.constraints.host_ports, state.GangPorts(n))) {
        return Infeasibility::kHostPort;
      }
    }
    const ShapeTerms& st = state.terms()[s];
    for (size_t t : st.anti) {
      const TermCount& tc = state.counts()[t];
      const int32_t d = tc.domains->of_node[n];
      if (Labeled(d) && tc.count[static_cast<size_t>(d)] > 0) {
        return Infeasibility::kPodAntiAffinity;
      }
    }
    for (size_t h : matching_holders) {
      const AntiHolder& holder = state.holders()[h];
      const int32_t d = holder.domains->of_node[n];
      if (Labeled(d) && holder.occupied[static_cast<size_t>(d)] > 0) {
        return Infeasibility::kPodAntiAffinity;
      }
    }
    for (size_t t : st.affinity) {
      const TermCount& tc = state.counts()[t];
      const int32_t d = tc.domains->of_node[n];
      if (!Labeled(d)) return Infeasibility::kPodAffinity;
      if (tc.deferred) continue;  // the hard level holds the gang in one domain of the key
      if (tc.count[static_cast<size_t>(d)] == 0) return Infeasibility::kPodAffinity;
    }
    for (size_t i = 0; i < st.spread.size(); ++i) {
      const SpreadCount& sc = state.spreads()[st.spread[i]];
      const int32_t d = sc.domains->of_node[n];
      if (!Labeled(d)) return Infeasibility::kTopologySpread;  // kube: missing required label
      if (!SpreadAllows(sc.constraint, sc.count[static_cast<size_t>(d)], sc.min,
                        sc.eligible_domains, self_spread[i] != 0)) {
        return Infeasibility::kTopologySpread;
      }
    }
    if (!pod.volumes.empty() && !fit_volumes(n, pod, nullptr, &missed_claim)) {
      return Infeasibility::kVolumeBinding;
    }
    return Infeasibility::kNone;
  };

  // Lower is better: fewest matching pods in the spread domains (so DoNotSchedule constraints
  // stay satisfiable), most gang pods already in the node's domains coarse to fine (the soft
  // topology keys), best fit, name.
  auto score = [&](NodeIndex n, size_t s, std::vector<int64_t>& key) {
    key.clear();
    int64_t spread = 0;
    for (size_t i : state.terms()[s].spread) {
      const SpreadCount& sc = state.spreads()[i];
      spread += sc.count[static_cast<size_t>(sc.domains->of_node[n])];
    }
    key.push_back(spread);
    for (size_t l = 0; l < levels_.size(); ++l) {
      const int32_t d = levels_[l]->of_node[n];
      key.push_back(Labeled(d) ? -level_count[l][static_cast<size_t>(d)] : 0);
    }
    const int64_t primary_extra = primary_ ? extra[size_t{n} * r_count + *primary_] : 0;
    key.push_back(reserve ? -(PrimaryFree(n, /*current=*/true) - primary_extra)
                          : PrimaryFree(n, /*current=*/false) - primary_extra - shapes_[s].primary);
    key.push_back(n);
  };

  auto place = [&](NodeIndex n, size_t s, const PodRequest& pod) {
    if (std::find(touched.begin(), touched.end(), n) == touched.end()) touched.push_back(n);
    for (const auto& [r, amount] : shapes_[s].demand) extra[size_t{n} * r_count + r] += amount;
    if (!pod.constraints.host_ports.empty()) {
      auto& ports = state.GangPorts(n);
      ports.insert(ports.end(), pod.constraints.host_ports.begin(),
                   pod.constraints.host_ports.end());
    }
    for (TermCount& tc : state.counts()) {
      if (!TermMatchesPod(tc.term, tc.owner_namespace, pod.namespace_, pod.labels)) continue;
      state.Set(tc.total, tc.total + 1);
      const int32_t d = tc.domains->of_node[n];
      if (Labeled(d)) {
        int64_t& slot = tc.count[static_cast<size_t>(d)];
        state.Set(slot, slot + 1);
      }
    }
    for (size_t h : state.terms()[s].holders) {
      AntiHolder& holder = state.holders()[h];
      const int32_t d = holder.domains->of_node[n];
      if (Labeled(d)) {
        int64_t& slot = holder.occupied[static_cast<size_t>(d)];
        state.Set(slot, slot + 1);
      }
    }
    // Every shape's spread counts see this pod when it is in their namespace, selected, and on
    // a node that shape's pods could use (the count is over those nodes only).
    for (SpreadCount& sc : state.spreads()) {
      const int32_t d = sc.domains->of_node[n];
      if (!Labeled(d) || !sc.eligible_domain[static_cast<size_t>(d)] || pod.namespace_ != sc.ns ||
          !MatchesLabelSelector(sc.constraint.selector, pod.labels)) {
        continue;
      }
      if (!state.Eligible(static_cast<size_t>(&sc - state.spreads().data()), n)) continue;
      int64_t& slot = sc.count[static_cast<size_t>(d)];
      const bool was_min = slot == sc.min;
      state.Set(slot, slot + 1);
      if (was_min) {
        int64_t min = std::numeric_limits<int64_t>::max();
        for (size_t e = 0; e < sc.count.size(); ++e) {
          if (sc.eligible_domain[e]) min = std::min(min, sc.count[e]);
        }
        state.Set(sc.min, min);
      }
    }
    for (size_t l = 0; l < levels_.size(); ++l) {
      const int32_t d = levels_[l]->of_node[n];
      if (Labeled(d)) ++level_count[l][static_cast<size_t>(d)];
    }
  };

  // One attempt over `nodes`; true with every pod assigned.
  auto attempt = [&](const Nodes& nodes) -> bool {
    const size_t mark = state.Mark();
    assignments.clear();
    claim_choices.clear();
    attempt_taken.clear();
    for (auto& counts : level_count) std::fill(counts.begin(), counts.end(), 0);
    std::vector<int64_t> key;
    std::vector<int64_t> best_key;
    std::vector<size_t> matching_holders;
    std::vector<char> self_spread;
    bool ok = true;
    for (size_t s = 0; s < shapes_.size() && ok; ++s) {
      for (const auto& [role, replica] : shapes_[s].members) {
        const PodRequest& pod = gang_.roles[role].pods[replica];
        matching_holders.clear();
        for (size_t h = 0; h < state.holders().size(); ++h) {
          const AntiHolder& holder = state.holders()[h];
          if (TermMatchesPod(holder.term, holder.owner_namespace, pod.namespace_, pod.labels)) {
            matching_holders.push_back(h);
          }
        }
        self_spread.clear();
        for (size_t i : state.terms()[s].spread) {
          self_spread.push_back(
              MatchesLabelSelector(state.spreads()[i].constraint.selector, pod.labels) ? 1 : 0);
        }
        AttemptFailure failure;
        failure.claim_misses.assign(pod.volumes.size(), 0);
        std::optional<NodeIndex> best;
        for (NodeIndex n : nodes) {
          const Infeasibility why = check(n, s, pod, matching_holders, self_spread);
          if (why != Infeasibility::kNone) {
            ++failure.excluded[static_cast<size_t>(why)];
            if (why == Infeasibility::kVolumeBinding) ++failure.claim_misses[missed_claim];
            continue;
          }
          score(n, s, key);
          if (!best || key < best_key) {
            best = n;
            best_key.swap(key);
          }
        }
        if (!best) {
          failure.placed = assignments.size();
          failure.role = role;
          failure.replica = replica;
          if (!failed_once || failure.placed > best_failure.placed) best_failure = failure;
          failed_once = true;
          ok = false;
          break;
        }
        place(*best, s, pod);
        assignments.push_back({role, replica, *best, snapshot_.node(*best).name, {}});
        if (!pod.volumes.empty()) {
          fit_volumes(*best, pod, &assignments.back().volumes, nullptr);
          for (const ClaimChoice& choice : assignments.back().volumes) {
            claim_choices.emplace(choice.claim, choice);
            if (!choice.volume.empty()) attempt_taken.insert(choice.volume);
          }
        }
      }
    }
    if (!ok) {
      state.UndoTo(mark);
      for (NodeIndex n : touched) {
        std::fill_n(extra.begin() + static_cast<std::ptrdiff_t>(size_t{n} * r_count), r_count, 0);
        state.GangPorts(n).clear();
      }
      touched.clear();
    }
    return ok;
  };

  // Hard keys: requiredTopologyKey and the gang's own affinity keys, one domain of all at once.
  std::vector<std::string> hard = state.HardKeys();
  if (!gang_.required_topology_key.empty() &&
      std::find(hard.begin(), hard.end(), gang_.required_topology_key) == hard.end()) {
    hard.insert(hard.begin(), gang_.required_topology_key);
  }
  bool placed = false;
  size_t domains_tried = 0;
  if (hard.empty()) {
    placed = attempt(candidates);
  } else {
    // Nodes grouped by the tuple of their values for every hard key; nodes missing one drop out.
    std::map<std::vector<std::string>, Nodes> groups;
    for (NodeIndex n : candidates) {
      std::vector<std::string> tuple;
      for (const std::string& key : hard) {
        auto it = snapshot_.node(n).labels.find(key);
        if (it == snapshot_.node(n).labels.end()) break;
        tuple.push_back(it->second);
      }
      if (tuple.size() == hard.size()) groups[tuple].push_back(n);
    }
    const int64_t wanted = Remaining();
    std::vector<std::pair<int64_t, const Nodes*>> holding;
    for (const auto& [tuple, nodes] : groups) {
      int64_t free = 0;
      if (TrialCount(nodes, remaining_, &free) >= wanted) {
        holding.emplace_back(reserve ? -free : free, &nodes);
      }
    }
    std::stable_sort(holding.begin(), holding.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [preference, nodes] : holding) {
      ++domains_tried;
      if ((placed = attempt(*nodes))) break;
    }
    if (!placed && domains_tried == 0) {
      if (!gang_.required_topology_key.empty() && hard.size() == 1) {
        return Explain(candidates, /*topology_failed=*/true);
      }
      std::string keys;
      for (const std::string& key : hard) keys += (keys.empty() ? "" : ", ") + key;
      return Placement{{},
                       PlacementFailure::kPodAffinity,
                       "podAffinity within the gang (or requiredTopologyKey) puts all " +
                           std::to_string(wanted) + " pods in one domain of " + keys +
                           "; no such domain can hold them"};
    }
  }
  if (placed) {
    Placement placement;
    placement.assignments = std::move(assignments);
    std::sort(placement.assignments.begin(), placement.assignments.end(),
              [](const PodAssignment& a, const PodAssignment& b) {
                return std::tie(a.role, a.replica) < std::tie(b.role, b.replica);
              });
    return placement;
  }

  // The constraint that excluded the most nodes for the pod that found none names the failure;
  // when none did, capacity did, and the capacity explanation says how.
  static constexpr std::pair<Infeasibility, PlacementFailure> kConstraints[] = {
      {Infeasibility::kHostPort, PlacementFailure::kHostPort},
      {Infeasibility::kPodAffinity, PlacementFailure::kPodAffinity},
      {Infeasibility::kPodAntiAffinity, PlacementFailure::kPodAntiAffinity},
      {Infeasibility::kTopologySpread, PlacementFailure::kTopologySpread},
      {Infeasibility::kVolumeBinding, PlacementFailure::kVolumeBinding}};
  const AttemptFailure& f = best_failure;
  std::optional<std::pair<Infeasibility, PlacementFailure>> worst;
  for (const auto& c : kConstraints) {
    const int64_t n = f.excluded[static_cast<size_t>(c.first)];
    if (n > 0 && (!worst || n > f.excluded[static_cast<size_t>(worst->first)])) worst = c;
  }
  if (!worst) return Explain(candidates, /*topology_failed=*/!gang_.required_topology_key.empty());
  const PodRequest& pod = gang_.roles[f.role].pods[f.replica];
  std::string what;
  switch (worst->first) {
    case Infeasibility::kHostPort:
      what = "hostPort " + DescribePorts(pod.constraints.host_ports);
      break;
    case Infeasibility::kPodAffinity:
      what = "podAffinity topologyKey " + DescribeKeys(pod.constraints.affinity);
      break;
    case Infeasibility::kPodAntiAffinity:
      what = pod.constraints.anti_affinity.empty()
                 ? "a running pod's podAntiAffinity"
                 : "podAntiAffinity topologyKey " + DescribeKeys(pod.constraints.anti_affinity);
      break;
    case Infeasibility::kVolumeBinding: {
      const auto most = std::max_element(f.claim_misses.begin(), f.claim_misses.end());
      what = DescribeClaimMiss(pod.volumes[static_cast<size_t>(most - f.claim_misses.begin())],
                               f.excluded[static_cast<size_t>(Infeasibility::kVolumeBinding)]);
      break;
    }
    default: {
      for (const SpreadConstraint& c : pod.constraints.spread) {
        what += (what.empty() ? "topologySpreadConstraints " : ", ") + std::string("maxSkew ") +
                std::to_string(c.max_skew) + " on " + c.topology_key;
      }
      break;
    }
  }
  std::string message = gang_.roles[f.role].name + " pod " + std::to_string(f.replica) +
                        " fits no node after " + std::to_string(f.placed) + " of the gang's " +
                        std::to_string(gang_.PodCount()) + " pods (" + what + ")";
  if (domains_tried > 1) message += " in any of " + std::to_string(domains_tried) + " domains";
  const std::string excluded = DescribeExcluded(f.excluded);
  if (!excluded.empty()) message += ": " + excluded;
  return Placement{{}, worst->second, message};
}

}  // namespace lockstep::scheduler::internal
