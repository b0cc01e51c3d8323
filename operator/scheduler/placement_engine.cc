#include "operator/scheduler/placement_engine.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

namespace lockstep::scheduler::internal {
namespace {

constexpr int64_t kNoLimit = std::numeric_limits<int32_t>::max();

// Pods of one shape are interchangeable for capacity and constraints; their labels may differ
// per replica (lockstep.dev/replica-index) and are not part of the shape.
bool SameShape(const PodRequest& a, const PodRequest& b) {
  return a.requests == b.requests && a.tolerations == b.tolerations &&
         a.node_selector == b.node_selector && a.required_affinity == b.required_affinity &&
         a.namespace_ == b.namespace_ && a.constraints == b.constraints;
}

}  // namespace

PlacementEngine::PlacementEngine(const Snapshot& snapshot, const GangRequest& gang,
                                 PlacementOptions options)
    : snapshot_(snapshot), gang_(gang), options_(options) {}

int64_t PlacementEngine::Free(NodeIndex n, ResourceId r) const {
  return options_.capacity == CapacityMode::kFree ? snapshot_.Free(n, r)
                                                  : snapshot_.Allocatable(n, r);
}

// `current`: what is free now regardless of the capacity mode (reservations prefer it).
int64_t PlacementEngine::PrimaryFree(NodeIndex n, bool current) const {
  if (!primary_) return 0;
  return std::max<int64_t>(0, current ? snapshot_.Free(n, *primary_) : Free(n, *primary_));
}

// Groups identical pod requests; the largest (by primary resource, then pod count) goes first
// so big pods claim whole nodes before small ones fill the gaps.
bool PlacementEngine::BuildShapes() {
  bool any_gpu = false;
  for (size_t role = 0; role < gang_.roles.size(); ++role) {
    const auto& pods = gang_.roles[role].pods;
    for (size_t replica = 0; replica < pods.size(); ++replica) {
      const PodRequest& pod = pods[replica];
      for (const auto& [name, amount] : pod.requests.entries()) {
        if (amount < 0) return false;
        if (name == kGpu) any_gpu = true;
      }
      auto same = std::find_if(shapes_.begin(), shapes_.end(),
                               [&](const Shape& s) { return SameShape(*s.pod, pod); });
      if (same == shapes_.end()) {
        shapes_.emplace_back();
        shapes_.back().pod = &pod;
        same = shapes_.end() - 1;
      }
      same->members.emplace_back(role, replica);
    }
  }
  primary_ = snapshot_.FindResource(any_gpu ? kGpu : kCpu);
  const std::optional<ResourceId> pods = snapshot_.FindResource(kPods);
  for (Shape& shape : shapes_) {
    for (const auto& [name, amount] : shape.pod->requests.entries()) {
      if (name == kPods) continue;
      std::optional<ResourceId> r = snapshot_.FindResource(name);
      if (!r) {
        shape.missing_resource = name;
        shape.missing_amount = amount;
        continue;
      }
      shape.demand.emplace_back(*r, amount);
      if (r == primary_) shape.primary = amount;
    }
    if (pods) shape.demand.emplace_back(*pods, 1);
  }
  std::stable_sort(shapes_.begin(), shapes_.end(), [](const Shape& a, const Shape& b) {
    return std::tie(a.primary, a.pod->requests.entries()) >
           std::tie(b.primary, b.pod->requests.entries());
  });
  return true;
}

// With a required key, it is the first (hard) level; the soft keys finer than it follow.
void PlacementEngine::ResolveLevels() {
  std::vector<std::string> keys;
  auto required_at = std::find(gang_.topology_keys.begin(), gang_.topology_keys.end(),
                               gang_.required_topology_key);
  if (!gang_.required_topology_key.empty()) {
    hard_first_level_ = true;
    keys.push_back(gang_.required_topology_key);
    auto finer =
        required_at == gang_.topology_keys.end() ? gang_.topology_keys.begin() : required_at + 1;
    keys.insert(keys.end(), finer, gang_.topology_keys.end());
  } else {
    keys = gang_.topology_keys;
  }
  for (const std::string& key : keys) {
    if (key.empty()) continue;
    const DomainIndex* index = snapshot_.Domains(key);
    if (!index) index = &owned_indexes_.emplace_back(snapshot_.BuildDomainIndex(key));
    if (std::find(levels_.begin(), levels_.end(), index) == levels_.end()) levels_.push_back(index);
  }
}

void PlacementEngine::ComputeFits(Shape& shape, const std::vector<bool>& excluded) {
  const size_t n_count = snapshot_.size();
  shape.fit.assign(n_count, 0);
  shape.reason.assign(n_count, Infeasibility::kNone);
  for (NodeIndex n = 0; n < n_count; ++n) {
    Infeasibility reason =
        excluded[n] ? Infeasibility::kExcluded : CheckStatic(*shape.pod, snapshot_.node(n));
    shape.reason[n] = reason;
    if (reason != Infeasibility::kNone || !shape.missing_resource.empty()) continue;
    int64_t fit = kNoLimit;
    for (const auto& [r, amount] : shape.demand) {
      fit = std::min(fit, std::max<int64_t>(0, Free(n, r)) / amount);
    }
    shape.fit[n] = fit;
  }
}

int64_t PlacementEngine::PackNode(NodeIndex n, std::vector<int64_t>& remaining, bool commit,
                                  int64_t* primary_left) {
  const int64_t primary_before = PrimaryFree(n, /*current=*/false);
  if (shapes_.size() == 1) {  // The common case needs no per-resource bookkeeping.
    const int64_t k = std::min(shapes_[0].fit[n], remaining[0]);
    remaining[0] -= k;
    if (commit) chosen_[0].insert(chosen_[0].end(), static_cast<size_t>(k), n);
    if (primary_left) *primary_left = primary_before - k * shapes_[0].primary;
    return k;
  }
  const size_t r_count = snapshot_.resource_count();
  scratch_.resize(r_count);
  for (ResourceId r = 0; r < r_count; ++r) scratch_[r] = std::max<int64_t>(0, Free(n, r));
  int64_t placed = 0;
  int64_t primary_used = 0;
  for (size_t s = 0; s < shapes_.size(); ++s) {
    if (remaining[s] == 0 || shapes_[s].fit[n] == 0) continue;
    int64_t k = remaining[s];
    for (const auto& [r, amount] : shapes_[s].demand) k = std::min(k, scratch_[r] / amount);
    if (k == 0) continue;
    for (const auto& [r, amount] : shapes_[s].demand) scratch_[r] -= k * amount;
    remaining[s] -= k;
    placed += k;
    primary_used += k * shapes_[s].primary;
    if (commit) chosen_[s].insert(chosen_[s].end(), static_cast<size_t>(k), n);
  }
  if (primary_left) *primary_left = primary_before - primary_used;
  return placed;
}

int64_t PlacementEngine::TrialCount(const Nodes& nodes, std::vector<int64_t> remaining,
                                    int64_t* primary_free) {
  int64_t placed = 0;
  int64_t free = 0;
  const int64_t wanted = std::accumulate(remaining.begin(), remaining.end(), int64_t{0});
  for (NodeIndex n : nodes) {
    if (placed < wanted) placed += PackNode(n, remaining, /*commit=*/false, nullptr);
    free += PrimaryFree(n, options_.capacity == CapacityMode::kAllocatable);
  }
  if (primary_free) *primary_free = free;
  return placed;
}

int64_t PlacementEngine::Remaining() const {
  return std::accumulate(remaining_.begin(), remaining_.end(), int64_t{0});
}

std::vector<std::pair<int32_t, PlacementEngine::Nodes>> PlacementEngine::Partition(
    const Nodes& nodes, size_t level, bool drop_unlabeled) const {
  const DomainIndex& index = *levels_[level];
  std::vector<Nodes> by_domain(index.values.size() + 1);  // last slot: unlabeled
  for (NodeIndex n : nodes) {
    const int32_t d = index.of_node[n];
    by_domain[d == DomainIndex::kUnlabeled ? index.values.size() : static_cast<size_t>(d)]
        .push_back(n);
  }
  std::vector<std::pair<int32_t, Nodes>> groups;
  for (size_t d = 0; d < by_domain.size(); ++d) {
    if (by_domain[d].empty()) continue;
    const bool unlabeled = d == index.values.size();
    if (unlabeled && drop_unlabeled) continue;
    groups.emplace_back(unlabeled ? DomainIndex::kUnlabeled : static_cast<int32_t>(d),
                        std::move(by_domain[d]));
  }
  return groups;
}

// Fewest domains: while no single domain can hold the rest, take the one holding the most; then
// the best-fitting domain that holds the rest (least free now; a reservation takes the most).
void PlacementEngine::FillDomain(const Nodes& nodes, size_t level) {
  if (level == levels_.size()) return FillNodes(nodes);
  auto groups = Partition(nodes, level, /*drop_unlabeled=*/false);
  const bool reserve = options_.capacity == CapacityMode::kAllocatable;
  while (Remaining() > 0 && !groups.empty()) {
    const int64_t wanted = Remaining();
    size_t best = groups.size();
    int64_t best_cap = 0;
    int64_t best_free = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      int64_t free = 0;
      const int64_t cap = TrialCount(groups[g].second, remaining_, &free);
      const bool holds = cap >= wanted;
      const bool best_holds = best < groups.size() && best_cap >= wanted;
      bool better = best == groups.size();
      if (!better && holds != best_holds) better = holds;
      if (!better && holds && best_holds) better = reserve ? free > best_free : free < best_free;
      if (!better && !holds && !best_holds) better = cap > best_cap;
      if (better) std::tie(best, best_cap, best_free) = std::make_tuple(g, cap, free);
    }
    if (best_cap == 0) return;
    FillDomain(groups[best].second, level + 1);
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(best));
  }
}

// Best fit: least primary resource left after packing, then most pods, then name order.
// A reservation instead prefers the nodes with the most free now, so it completes soonest.
void PlacementEngine::FillNodes(const Nodes& nodes) {
  struct Candidate {
    int64_t key;
    int64_t pods;
    NodeIndex node;
  };
  const bool reserve = options_.capacity == CapacityMode::kAllocatable;
  std::vector<Candidate> candidates;
  candidates.reserve(nodes.size());
  for (NodeIndex n : nodes) {
    trial_.assign(remaining_.begin(), remaining_.end());  // reuses its buffer: no allocation
    int64_t left = 0;
    const int64_t pods = PackNode(n, trial_, /*commit=*/false, &left);
    if (pods == 0) continue;
    candidates.push_back({reserve ? -PrimaryFree(n, /*current=*/true) : left, pods, n});
  }
  const auto by_fit = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.key, b.pods, a.node) < std::tie(b.key, a.pods, b.node);
  };
  // Each chosen node takes at least one pod, so only the first Remaining() can matter.
  const size_t prefix = std::min(candidates.size(), static_cast<size_t>(Remaining()));
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(prefix),
                    candidates.end(), by_fit);
  for (size_t i = 0; i < prefix && Remaining() > 0; ++i) {
    PackNode(candidates[i].node, remaining_, /*commit=*/true, nullptr);
  }
}

PlacementEngine::Checkpoint PlacementEngine::Save() const {
  Checkpoint c{remaining_, {}};
  for (const Nodes& nodes : chosen_) c.chosen_sizes.push_back(nodes.size());
  return c;
}

void PlacementEngine::Restore(const Checkpoint& c) {
  remaining_ = c.remaining;
  for (size_t s = 0; s < chosen_.size(); ++s) chosen_[s].resize(c.chosen_sizes[s]);
}

// The hard level: domains that can hold the whole gang, best fit first. Greedy packing of mixed
// shapes can still fail inside one, so each is tried in turn, with and without finer levels.
bool PlacementEngine::PlaceInOneDomain(const Nodes& candidates) {
  auto groups = Partition(candidates, 0, /*drop_unlabeled=*/true);
  const int64_t wanted = Remaining();
  const bool reserve = options_.capacity == CapacityMode::kAllocatable;
  std::vector<std::pair<int64_t, size_t>> holding;  // (preference, group)
  for (size_t g = 0; g < groups.size(); ++g) {
    int64_t free = 0;
    if (TrialCount(groups[g].second, remaining_, &free) >= wanted) {
      holding.emplace_back(reserve ? -free : free, g);
    }
  }
  std::sort(holding.begin(), holding.end());
  for (const auto& [preference, g] : holding) {
    const Checkpoint before = Save();
    FillDomain(groups[g].second, 1);
    if (Remaining() == 0) return true;
    Restore(before);
    FillNodes(groups[g].second);  // mixed shapes: the finer levels' search may be the obstacle
    if (Remaining() == 0) return true;
    Restore(before);
  }
  return false;
}

Placement PlacementEngine::Run() {
  if (std::optional<Placement> waiting = WaitingClaim()) return *waiting;
  if (!BuildShapes()) {
    return Placement{{}, PlacementFailure::kInvalidRequest, "a pod requests a negative amount"};
  }
  if (shapes_.empty()) return Placement{};
  ResolveLevels();
  std::vector<bool> excluded(snapshot_.size(), false);
  for (const std::string& name : gang_.excluded_nodes) {
    if (auto n = snapshot_.Find(name)) excluded[*n] = true;
  }
  for (Shape& shape : shapes_) {
    ComputeFits(shape, excluded);
    remaining_.push_back(static_cast<int64_t>(shape.members.size()));
  }
  chosen_.assign(shapes_.size(), {});
  Nodes candidates;
  for (NodeIndex n = 0; n < snapshot_.size(); ++n) {
    if (std::any_of(shapes_.begin(), shapes_.end(), [&](const Shape& s) { return s.fit[n] > 0; }))
      candidates.push_back(n);
  }
  if (NeedsOneByOne()) return RunOneByOne(candidates);
  if (hard_first_level_) {
    if (!PlaceInOneDomain(candidates)) return Explain(candidates, /*topology_failed=*/true);
    return BuildAssignments();
  }
  const Checkpoint start = Save();
  FillDomain(candidates, 0);
  if (Remaining() > 0) {  // Mixed shapes can defeat the domain search; try without domains.
    Restore(start);
    FillNodes(candidates);
  }
  if (Remaining() > 0) return Explain(candidates, /*topology_failed=*/false);
  return BuildAssignments();
}

// Replica indexes in topology order: each shape's nodes sorted by (domain per level, name).
Placement PlacementEngine::BuildAssignments() const {
  Placement placement;
  for (size_t s = 0; s < shapes_.size(); ++s) {
    std::vector<std::pair<std::vector<int32_t>, NodeIndex>> slots;
    for (NodeIndex n : chosen_[s]) {
      std::vector<int32_t> key;
      for (const DomainIndex* level : levels_) {
        const int32_t d = level->of_node[n];
        key.push_back(d == DomainIndex::kUnlabeled ? std::numeric_limits<int32_t>::max() : d);
      }
      slots.emplace_back(std::move(key), n);
    }
    std::sort(slots.begin(), slots.end());
    for (size_t i = 0; i < shapes_[s].members.size(); ++i) {
      const auto [role, replica] = shapes_[s].members[i];
      const NodeIndex n = slots[i].second;
      placement.assignments.push_back({role, replica, n, snapshot_.node(n).name, {}});
    }
  }
  std::sort(placement.assignments.begin(), placement.assignments.end(),
            [](const PodAssignment& a, const PodAssignment& b) {
              return std::tie(a.role, a.replica) < std::tie(b.role, b.replica);
            });
  return placement;
}

}  // namespace lockstep::scheduler::internal
