#pragma once
// When a TrainingJob has succeeded: the pods of its success roles (api::EffectiveSuccessRoles:
// the leader role such as a TensorFlow chief when there is one, else the workers) have
// Succeeded, all of them (successPolicy.operator All) or any one (Any). Other roles (ps,
// evaluator) never finish on their own; the plan stops them when the job succeeds.

#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

// A message saying why the job succeeded, or nullopt while it has not.
std::optional<std::string> EvaluateSuccess(const api::TrainingJobSpec& spec,
                                           const std::vector<kube::Pod>& pods);

}  // namespace lockstep::controller
