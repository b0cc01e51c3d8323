#include "operator/scheduler/cycle/convert.h"

#include <optional>
#include <string>

namespace lockstep::scheduler {
namespace {

int64_t FromMilli(const std::string& name, int64_t milli, bool round_up) {
  if (name == kCpu) return milli;
  if (round_up) return milli / 1000 + (milli % 1000 > 0 ? 1 : 0);
  return milli / 1000;
}

Resources Convert(const kube::ResourceList& milli, bool round_up) {
  Resources out;
  for (const auto& [name, amount] : milli) out.Set(name, FromMilli(name, amount, round_up));
  return out;
}

std::optional<TaintEffect> ParseEffect(const std::string& effect) {
  if (effect == "NoSchedule") return TaintEffect::kNoSchedule;
  if (effect == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (effect == "NoExecute") return TaintEffect::kNoExecute;
  return std::nullopt;
}

std::optional<SelectorOperator> ParseSelectorOperator(const std::string& op) {
  if (op == "In") return SelectorOperator::kIn;
  if (op == "NotIn") return SelectorOperator::kNotIn;
  if (op == "Exists") return SelectorOperator::kExists;
  if (op == "DoesNotExist") return SelectorOperator::kDoesNotExist;
  if (op == "Gt") return SelectorOperator::kGt;
  if (op == "Lt") return SelectorOperator::kLt;
  return std::nullopt;
}

}  // namespace

// An operator this code does not know becomes "In" with no values, which matches nothing: the
// pod waits with an explanation instead of landing where the user did not allow.
std::vector<NodeSelectorRequirement> ConvertRequirements(
    const std::vector<kube::NodeSelectorRequirement>& in) {
  std::vector<NodeSelectorRequirement> out;
  out.reserve(in.size());
  for (const auto& r : in) {
    NodeSelectorRequirement req;
    req.key = r.key;
    if (auto op = ParseSelectorOperator(r.op)) {
      req.op = *op;
      req.values = r.values;
    }
    out.push_back(std::move(req));
  }
  return out;
}

namespace {

Toleration ConvertToleration(const kube::Toleration& t) {
  Toleration out;
  out.key = t.key;
  out.op = t.op == "Exists" ? TolerationOperator::kExists : TolerationOperator::kEqual;
  out.value = t.value;
  if (!t.effect.empty()) {
    // An unknown effect then only tolerates PreferNoSchedule, which placement ignores anyway:
    // the toleration is inert rather than broader than written.
    out.effect = ParseEffect(t.effect).value_or(TaintEffect::kPreferNoSchedule);
  }
  return out;
}

}  // namespace

LabelSelector ConvertSelector(const kube::LabelSelector& in) {
  return LabelSelector{{in.match_labels.begin(), in.match_labels.end()},
                       ConvertRequirements(in.match_expressions)};
}

namespace {

// matchLabelKeys / mismatchLabelKeys: `key In (value)` / `key NotIn (value)` with the value the
// carrying pod has; keys it lacks are ignored, as the API says.
void AddLabelKeys(LabelSelector& selector, const std::vector<std::string>& keys,
                  const kube::StringMap& labels, SelectorOperator op) {
  for (const std::string& key : keys) {
    auto it = labels.find(key);
    if (it != labels.end()) selector.match_expressions.push_back({key, op, {it->second}});
  }
}

// `anti`: a namespaceSelector with terms needs the namespaces' labels, which the scheduler does
// not watch; an anti-affinity term then looks at every namespace (stricter than asked), an
// affinity term only at the namespaces it names (never looser than asked).
PodAffinityTerm ConvertTerm(const kube::PodAffinityTerm& in, const kube::StringMap& labels,
                            bool anti) {
  PodAffinityTerm out;
  if (in.label_selector) {
    out.selector = ConvertSelector(*in.label_selector);
    AddLabelKeys(*out.selector, in.match_label_keys, labels, SelectorOperator::kIn);
    AddLabelKeys(*out.selector, in.mismatch_label_keys, labels, SelectorOperator::kNotIn);
  }
  out.namespaces = in.namespaces;
  if (in.namespace_selector) {
    const bool empty = in.namespace_selector->match_labels.empty() &&
                       in.namespace_selector->match_expressions.empty();
    if (empty || anti) {
      out.all_namespaces = true;
    } else if (out.namespaces.empty()) {
      out.namespaces.push_back("");  // names no real namespace: selects no pod
    }
  }
  out.topology_key = in.topology_key;
  return out;
}

PodConstraints ConvertConstraints(const kube::PodPlacementTerms& in,
                                  const kube::StringMap& labels) {
  PodConstraints out;
  for (const auto& t : in.required_affinity) out.affinity.push_back(ConvertTerm(t, labels, false));
  for (const auto& t : in.required_anti_affinity) {
    out.anti_affinity.push_back(ConvertTerm(t, labels, true));
  }
  for (const auto& c : in.topology_spread) {
    if (c.when_unsatisfiable != "DoNotSchedule") continue;  // ScheduleAnyway: a score only
    SpreadConstraint sc;
    sc.max_skew = c.max_skew;
    sc.topology_key = c.topology_key;
    if (c.label_selector) {
      sc.selector = ConvertSelector(*c.label_selector);
      AddLabelKeys(*sc.selector, c.match_label_keys, labels, SelectorOperator::kIn);
    }
    sc.min_domains = c.min_domains.value_or(1);
    out.spread.push_back(std::move(sc));
  }
  for (const auto& p : in.host_ports) {
    out.host_ports.push_back({p.host_port, p.protocol.empty() ? "TCP" : p.protocol, p.host_ip});
  }
  return out;
}

}  // namespace

Resources RequestsFromMilli(const kube::ResourceList& milli) { return Convert(milli, true); }
Resources AllocatableFromMilli(const kube::ResourceList& milli) { return Convert(milli, false); }

NodeInfo ToNodeInfo(const kube::Node& node) {
  NodeInfo info;
  info.name = node.meta.name;
  info.labels = {node.meta.labels.begin(), node.meta.labels.end()};
  for (const auto& t : node.taints) {
    // An unknown effect is treated as NoSchedule: the safe reading of a taint we do not know.
    info.taints.push_back(
        {t.key, t.value, ParseEffect(t.effect).value_or(TaintEffect::kNoSchedule)});
  }
  info.unschedulable = node.unschedulable;
  info.ready = node.IsReady();
  info.allocatable = AllocatableFromMilli(node.allocatable);
  return info;
}

PodRequest ToPodRequest(const kube::Pod& pod) {
  PodRequest req;
  req.requests = RequestsFromMilli(pod.requests);
  for (const auto& t : pod.tolerations) req.tolerations.push_back(ConvertToleration(t));
  req.node_selector = {pod.node_selector.begin(), pod.node_selector.end()};
  for (const auto& term : pod.required_node_affinity) {
    req.required_affinity.push_back({ConvertRequirements(term.match_expressions),
                                     ConvertRequirements(term.match_fields)});
  }
  req.namespace_ = pod.meta.namespace_;
  req.labels = {pod.meta.labels.begin(), pod.meta.labels.end()};
  if (pod.placement_terms) {
    req.constraints = ConvertConstraints(*pod.placement_terms, pod.meta.labels);
  }
  return req;
}

std::optional<BoundPod> ToBoundPod(const kube::Pod& pod, bool with_labels) {
  BoundPod out;
  if (pod.placement_terms) {
    PodConstraints c = ConvertConstraints(*pod.placement_terms, pod.meta.labels);
    out.host_ports = std::move(c.host_ports);
    out.anti_affinity = std::move(c.anti_affinity);
  }
  if (!with_labels && out.host_ports.empty() && out.anti_affinity.empty()) return std::nullopt;
  out.namespace_ = pod.meta.namespace_;
  if (with_labels) out.labels = {pod.meta.labels.begin(), pod.meta.labels.end()};
  return out;
}

}  // namespace lockstep::scheduler
