#pragma once
// The pods of a TrainingJob in node-rank order, and their names.
//
// Rule (docs/api.md): node ranks are assigned role by role, pods of one role by index:
//   1. leader roles, in spec.roles order: a role named chief, master, head, launcher or
//      coordinator (TensorFlow chief, Ray head, ...): the process that must be rank 0;
//   2. the workers (spec.replicas pods built from spec.template);
//   3. every other role (ps, evaluator, ...) in spec.roles order.
// Node rank 0 hosts the launcher's rendezvous server, so LOCKSTEP_RDZV_ENDPOINT names that pod.
// The gang scheduler may later permute worker indexes so neighbouring ranks share a rack; the
// rank of a (role, index) pair is only a hint the launcher's rendezvous may refine.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::api {

struct PodSlot {
  std::string role;
  int32_t index = 0;      // within the role
  int32_t node_rank = 0;  // across the job
  int32_t procs_per_pod = 1;
  // The role's PodTemplateSpec; points into the spec PodSlots() was given and lives as long.
  const nlohmann::json* pod_template = nullptr;
};

bool IsLeaderRole(std::string_view role_name);

// Every pod of the job in node-rank order, with `worker_replicas` workers (spec.replicas, or the
// size an elastic attempt runs at).
std::vector<PodSlot> PodSlots(const TrainingJobSpec& spec, int32_t worker_replicas);

// "<job>-<role>-<index>": the pod's name and hostname.
std::string PodName(std::string_view job_name, std::string_view role, int32_t index);

}  // namespace lockstep::api
