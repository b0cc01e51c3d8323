#include "operator/controller/success_policy.h"

#include <set>

#include "operator/api/children.h"
#include "operator/api/defaults.h"

namespace lockstep::controller {
namespace {

int32_t RoleReplicas(const api::TrainingJobSpec& spec, const std::string& role) {
  if (role == api::kWorkerRole) return spec.replicas;
  for (const api::Role& r : spec.roles) {
    if (r.name == role) return r.replicas;
  }
  return 0;
}

std::string Label(const kube::Pod& pod, std::string_view key) {
  auto it = pod.meta.labels.find(std::string(key));
  return it == pod.meta.labels.end() ? "" : it->second;
}

std::string JoinRoles(const std::vector<std::string>& roles) {
  std::string out;
  for (const std::string& r : roles) out += (out.empty() ? "" : ", ") + r;
  return out;
}

}  // namespace

std::optional<std::string> EvaluateSuccess(const api::TrainingJobSpec& spec,
                                           const std::vector<kube::Pod>& pods) {
  const std::vector<std::string> roles = api::EffectiveSuccessRoles(spec);
  const api::SuccessOperator op =
      spec.success_policy ? spec.success_policy->op : api::kDefaultSuccessOperator;
  int32_t expected = 0;
  for (const std::string& role : roles) expected += RoleReplicas(spec, role);
  if (expected == 0) return std::nullopt;

  // (role, index) pairs that succeeded; a pod is counted once even if listed twice.
  std::set<std::pair<std::string, std::string>> succeeded;
  const std::set<std::string> targets(roles.begin(), roles.end());
  for (const kube::Pod& pod : pods) {
    const std::string role = Label(pod, api::kLabelRole);
    if (pod.phase == "Succeeded" && targets.count(role) != 0) {
      succeeded.emplace(role, Label(pod, api::kLabelReplicaIndex));
    }
  }
  const int32_t done = static_cast<int32_t>(succeeded.size());
  if (op == api::SuccessOperator::kAny && done > 0) {
    return "a pod of role " + succeeded.begin()->first + " succeeded (successPolicy Any)";
  }
  if (op == api::SuccessOperator::kAll && done >= expected) {
    return "all " + std::to_string(expected) + " pods of role " + JoinRoles(roles) +
           " succeeded";
  }
  return std::nullopt;
}

}  // namespace lockstep::controller
