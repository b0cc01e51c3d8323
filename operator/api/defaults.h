#pragma once
// Defaults the CRD schema cannot express because they depend on other fields. (Static defaults
// are in schema_defaults.h and apply at decode time.)
//
//   procsPerPod      unset: the nvidia.com/gpu count of the role's first container (limits, else
//                    requests), or 1 without GPUs.
//   successPolicy    unset targetRoles: the first leader role (chief, master, head; see ranks.h)
//                    if the job has one, else "worker".

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::api {

// GPUs (nvidia.com/gpu) the first container of `pod_template` asks for; 0 when none or when the
// quantity is not a whole number.
int32_t TrainerGpuCount(const nlohmann::json& pod_template);
int32_t EffectiveProcsPerPod(std::optional<int32_t> procs_per_pod,
                             const nlohmann::json& pod_template);
std::vector<std::string> EffectiveSuccessRoles(const TrainingJobSpec& spec);

// Resolves every dependent default in place, so later code reads plain values.
void ApplyDefaults(TrainingJobSpec* spec);

}  // namespace lockstep::api
