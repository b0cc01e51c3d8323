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
  return req;
}

}  // namespace lockstep::scheduler
