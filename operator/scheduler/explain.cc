#include "operator/scheduler/explain.h"

#include "operator/scheduler/resource_units.h"

namespace lockstep::scheduler {
namespace {

std::string Amount(const std::string& resource, int64_t value) {
  return FormatResourceQuantity(resource, value) + " " + resource;
}

std::string WithExcluded(std::string message, const FailureFacts& facts) {
  const std::string excluded = DescribeExcluded(facts.excluded_by_reason);
  if (!excluded.empty()) message += " (" + excluded + ")";
  return message;
}

Placement Fail(PlacementFailure failure, std::string message) {
  Placement p;
  p.failure = failure;
  p.message = std::move(message);
  return p;
}

}  // namespace

std::string DescribeExcluded(const std::array<int64_t, kInfeasibilityCount>& excluded_by_reason) {
  int64_t total = 0;
  std::string parts;
  for (int i = 1; i < kInfeasibilityCount; ++i) {
    if (excluded_by_reason[i] == 0) continue;
    total += excluded_by_reason[i];
    if (!parts.empty()) parts += ", ";
    parts += std::to_string(excluded_by_reason[i]) + " " +
             std::string(InfeasibilityName(static_cast<Infeasibility>(i)));
  }
  if (total == 0) return "";
  return std::to_string(total) + (total == 1 ? " node" : " nodes") + " excluded: " + parts;
}

std::string DomainNoun(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

Placement ExplainFailure(const FailureFacts& f) {
  if (!f.missing_resource.empty()) {
    return Fail(PlacementFailure::kInsufficientResources,
                "needs " + Amount(f.missing_resource, f.missing_per_pod) +
                    " per pod; no node has " + f.missing_resource);
  }
  if (f.schedulable_nodes == 0) {
    return Fail(PlacementFailure::kNoFeasibleNodes, WithExcluded("no schedulable node", f));
  }
  if (!f.short_resource.empty()) {
    return Fail(PlacementFailure::kInsufficientResources,
                WithExcluded("needs " + Amount(f.short_resource, f.short_needed) + "; " +
                                 FormatResourceQuantity(f.short_resource, f.short_free) +
                                 " free on schedulable nodes",
                             f));
  }
  if (!f.required_key.empty()) {
    const std::string noun = DomainNoun(f.required_key);
    std::string message = "needs " + Amount(f.primary_resource, f.primary_needed) + " within one " +
                          f.required_key + "; ";
    if (f.largest_domain_free < f.primary_needed) {
      message += "largest free " + noun + " has " +
                 FormatResourceQuantity(f.primary_resource, f.largest_domain_free);
    } else {
      message += "no " + noun + " can hold all " + std::to_string(f.pods_needed) +
                 " pods (at most " + std::to_string(f.largest_domain_pods) + " in one " + noun +
                 ")";
    }
    return Fail(PlacementFailure::kTopology, message);
  }
  std::string message = "needs " + std::to_string(f.pods_needed) + " pods";
  if (f.primary_per_pod > 0) message += " of " + Amount(f.primary_resource, f.primary_per_pod);
  message += "; " + Amount(f.primary_resource, f.primary_free) +
             " free on schedulable nodes but only " + std::to_string(f.pods_fit) +
             " of the pods fit (free capacity is fragmented)";
  return Fail(PlacementFailure::kFragmented, WithExcluded(message, f));
}

}  // namespace lockstep::scheduler
