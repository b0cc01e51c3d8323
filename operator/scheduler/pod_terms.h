#pragma once
// Label selectors, inter-pod affinity terms and host ports: the vocabulary shared by what a
// pending pod asks (gang_request.h) and what a bound pod holds (node_info.h). Plain data; the
// matching rules are in feasibility.h (node selectors) and pod_constraints.h (pods).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::scheduler {

enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct NodeSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};

using Labels = std::map<std::string, std::string>;

// A metav1.LabelSelector over pod labels: matchLabels and matchExpressions ANDed (In, NotIn,
// Exists, DoesNotExist); an empty selector matches every pod. Where the API allows a null
// selector (it then matches no pod) the field is an std::optional.
struct LabelSelector {
  Labels match_labels;
  std::vector<NodeSelectorRequirement> match_expressions;
  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// One required podAffinity / podAntiAffinity term (pod_constraints.h has the matching rules).
struct PodAffinityTerm {
  std::optional<LabelSelector> selector;  // null matches no pod
  // The namespaces the selector looks in: these, or every namespace when `all_namespaces`; both
  // empty means the namespace of the pod that carries the term.
  std::vector<std::string> namespaces;
  bool all_namespaces = false;
  std::string topology_key;
  friend bool operator==(const PodAffinityTerm&, const PodAffinityTerm&) = default;
};

// One container port with hostPort > 0. An empty ip is 0.0.0.0 (every address).
struct HostPort {
  int32_t port = 0;
  std::string protocol = "TCP";
  std::string ip;
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

}  // namespace lockstep::scheduler
