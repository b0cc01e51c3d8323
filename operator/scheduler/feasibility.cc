#include "operator/scheduler/feasibility.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "common/enum_names.h"

namespace lockstep::scheduler {
namespace {

bool ParseInt(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Gt/Lt: exactly one integer value, and a label that parses as an integer.
bool CompareNumeric(const NodeSelectorRequirement& req, const std::string& label, bool greater) {
  int64_t want = 0;
  int64_t have = 0;
  if (req.values.size() != 1 || !ParseInt(req.values[0], want) || !ParseInt(label, have)) {
    return false;
  }
  return greater ? have > want : have < want;
}

bool Fits(const PodRequest& pod, const NodeInfo& node) {
  for (const auto& [name, amount] : pod.requests.entries()) {
    if (amount <= 0 || name == kPods) continue;
    if (node.allocatable.Get(name) - node.requested.Get(name) < amount) return false;
  }
  const int64_t pod_capacity = node.allocatable.Get(kPods);
  return pod_capacity == 0 || pod_capacity - node.requested.Get(kPods) >= 1;
}

}  // namespace

std::string_view InfeasibilityName(Infeasibility reason) {
  static constexpr NameTable<Infeasibility, kInfeasibilityCount> kNames = {
      {{Infeasibility::kNone, "feasible"},
       {Infeasibility::kExcluded, "excluded after failure"},
       {Infeasibility::kNotReady, "NotReady"},
       {Infeasibility::kUnschedulable, "cordoned"},
       {Infeasibility::kTaint, "taint not tolerated"},
       {Infeasibility::kNodeSelector, "nodeSelector mismatch"},
       {Infeasibility::kAffinity, "node affinity mismatch"},
       {Infeasibility::kResources, "insufficient resources"},
       {Infeasibility::kHostPort, "host port in use"},
       {Infeasibility::kPodAffinity, "pod affinity not satisfied"},
       {Infeasibility::kPodAntiAffinity, "pod anti-affinity"},
       {Infeasibility::kTopologySpread, "topology spread maxSkew"},
       {Infeasibility::kVolumeBinding, "volume binding"}}};
  return NameOf(kNames, reason, "unknown");
}

bool ToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect && *toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  switch (toleration.op) {
    case TolerationOperator::kExists:
      return true;
    case TolerationOperator::kEqual:
      return toleration.value == taint.value;
  }
  return false;
}

bool ToleratesTaints(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  for (const Taint& taint : taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    const bool tolerated =
        std::any_of(tolerations.begin(), tolerations.end(),
                    [&](const Toleration& t) { return ToleratesTaint(t, taint); });
    if (!tolerated) return false;
  }
  return true;
}

bool MatchesNodeSelector(const std::map<std::string, std::string>& selector,
                         const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : selector) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

bool MatchesRequirement(const NodeSelectorRequirement& req,
                        const std::map<std::string, std::string>& labels) {
  auto it = labels.find(req.key);
  const bool present = it != labels.end();
  switch (req.op) {
    case SelectorOperator::kIn:
      return present && Contains(req.values, it->second);
    case SelectorOperator::kNotIn:
      return !present || !Contains(req.values, it->second);
    case SelectorOperator::kExists:
      return present;
    case SelectorOperator::kDoesNotExist:
      return !present;
    case SelectorOperator::kGt:
      return present && CompareNumeric(req, it->second, /*greater=*/true);
    case SelectorOperator::kLt:
      return present && CompareNumeric(req, it->second, /*greater=*/false);
  }
  return false;
}

bool MatchesTerm(const NodeSelectorTerm& term, const NodeInfo& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const NodeSelectorRequirement& req : term.match_expressions) {
    if (!MatchesRequirement(req, node.labels)) return false;
  }
  for (const NodeSelectorRequirement& req : term.match_fields) {
    if (req.key != "metadata.name") return false;
    if (!MatchesRequirement(req, {{req.key, node.name}})) return false;
  }
  return true;
}

bool MatchesRequiredAffinity(const std::vector<NodeSelectorTerm>& terms, const NodeInfo& node) {
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const NodeSelectorTerm& t) { return MatchesTerm(t, node); });
}

Infeasibility CheckStatic(const PodRequest& pod, const NodeInfo& node) {
  if (!node.ready) return Infeasibility::kNotReady;
  if (node.unschedulable) {
    const Taint cordon{std::string(kUnschedulableTaintKey), "", TaintEffect::kNoSchedule};
    const bool tolerated =
        std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                    [&](const Toleration& t) { return ToleratesTaint(t, cordon); });
    if (!tolerated) return Infeasibility::kUnschedulable;
  }
  if (!ToleratesTaints(pod.tolerations, node.taints)) return Infeasibility::kTaint;
  if (!MatchesNodeSelector(pod.node_selector, node.labels)) return Infeasibility::kNodeSelector;
  if (!MatchesRequiredAffinity(pod.required_affinity, node)) return Infeasibility::kAffinity;
  return Infeasibility::kNone;
}

Infeasibility CheckNode(const PodRequest& pod, const NodeInfo& node) {
  const Infeasibility reason = CheckStatic(pod, node);
  if (reason != Infeasibility::kNone) return reason;
  return Fits(pod, node) ? Infeasibility::kNone : Infeasibility::kResources;
}

}  // namespace lockstep::scheduler
