#include "operator/scheduler/pod_constraints.h"

#include <algorithm>

#include "operator/scheduler/feasibility.h"

namespace lockstep::scheduler {
namespace {

bool IsWildcard(const std::string& ip) { return ip.empty() || ip == "0.0.0.0"; }

}  // namespace

bool MatchesLabelSelector(const LabelSelector& selector, const Labels& labels) {
  if (!MatchesNodeSelector(selector.match_labels, labels)) return false;
  for (const NodeSelectorRequirement& req : selector.match_expressions) {
    // Gt and Lt are node-selector operators only; in a label selector they match nothing.
    if (req.op == SelectorOperator::kGt || req.op == SelectorOperator::kLt) return false;
    if (!MatchesRequirement(req, labels)) return false;
  }
  return true;
}

bool MatchesLabelSelector(const std::optional<LabelSelector>& selector, const Labels& labels) {
  return selector.has_value() && MatchesLabelSelector(*selector, labels);
}

bool TermSelectsNamespace(const PodAffinityTerm& term, std::string_view owner_namespace,
                          std::string_view pod_namespace) {
  if (term.all_namespaces) return true;
  if (term.namespaces.empty()) return owner_namespace == pod_namespace;
  return std::find(term.namespaces.begin(), term.namespaces.end(), pod_namespace) !=
         term.namespaces.end();
}

bool TermMatchesPod(const PodAffinityTerm& term, std::string_view owner_namespace,
                    std::string_view pod_namespace, const Labels& pod_labels) {
  return TermSelectsNamespace(term, owner_namespace, pod_namespace) &&
         MatchesLabelSelector(term.selector, pod_labels);
}

bool HostPortsCollide(const HostPort& a, const HostPort& b) {
  if (a.port <= 0 || b.port <= 0 || a.port != b.port) return false;
  const std::string& pa = a.protocol.empty() ? std::string("TCP") : a.protocol;
  const std::string& pb = b.protocol.empty() ? std::string("TCP") : b.protocol;
  if (pa != pb) return false;
  return IsWildcard(a.ip) || IsWildcard(b.ip) || a.ip == b.ip;
}

bool AnyHostPortCollides(const std::vector<HostPort>& a, const std::vector<HostPort>& b) {
  for (const HostPort& x : a) {
    for (const HostPort& y : b) {
      if (HostPortsCollide(x, y)) return true;
    }
  }
  return false;
}

bool SpreadAllows(const SpreadConstraint& constraint, int64_t domain_count, int64_t min_count,
                  int64_t eligible_domains, bool self_matches) {
  const int64_t global_min = eligible_domains < constraint.min_domains ? 0 : min_count;
  return domain_count + (self_matches ? 1 : 0) - global_min <= constraint.max_skew;
}

}  // namespace lockstep::scheduler
