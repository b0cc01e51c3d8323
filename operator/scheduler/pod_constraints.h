#pragma once
// Inter-pod constraints with kube-scheduler's semantics (its InterPodAffinity, PodTopologySpread
// and NodePorts filters), as pure rules; inter_pod_placement.h applies them to a whole gang.
//  - A label selector: matchLabels and matchExpressions ANDed; NotIn and DoesNotExist match a pod
//    without the key; an empty selector matches every pod, a null one (std::nullopt) none.
//  - An affinity term selects the pods its selector matches in its namespaces (the carrier's
//    own when none are named, every one with a namespaceSelector of {}).
//  - Host ports: two ports collide when port and protocol are equal and either address is
//    0.0.0.0 (or empty) or both are the same address.
// Pure functions, thread-safe.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/pod_terms.h"

namespace lockstep::scheduler {

bool MatchesLabelSelector(const LabelSelector& selector, const Labels& labels);
bool MatchesLabelSelector(const std::optional<LabelSelector>& selector, const Labels& labels);

// Whether `term`, carried by a pod in `owner_namespace`, looks at pods of `pod_namespace`.
bool TermSelectsNamespace(const PodAffinityTerm& term, std::string_view owner_namespace,
                          std::string_view pod_namespace);
// Whether `term` (carried in `owner_namespace`) selects a pod of that namespace and labels.
bool TermMatchesPod(const PodAffinityTerm& term, std::string_view owner_namespace,
                    std::string_view pod_namespace, const Labels& pod_labels);

bool HostPortsCollide(const HostPort& a, const HostPort& b);
bool AnyHostPortCollides(const std::vector<HostPort>& a, const std::vector<HostPort>& b);

// The spread filter for one domain: a pod (counted itself when `self_matches`) may join a domain
// holding `domain_count` matching pods when the skew against the global minimum stays within
// maxSkew. `min_count` is the least count over the eligible domains, `eligible_domains` their
// number; with fewer than minDomains eligible domains the global minimum is 0.
bool SpreadAllows(const SpreadConstraint& constraint, int64_t domain_count, int64_t min_count,
                  int64_t eligible_domains, bool self_matches);

// Whether a pod asks anything of other pods or of the gang's other pods: then placement takes
// its pods one at a time (inter_pod_placement.h).
inline bool HasPodConstraints(const PodRequest& pod) { return !pod.constraints.empty(); }

}  // namespace lockstep::scheduler
