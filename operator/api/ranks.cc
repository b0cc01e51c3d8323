#include "operator/api/ranks.h"

#include <array>

#include "operator/api/defaults.h"

namespace lockstep::api {

bool IsLeaderRole(std::string_view role_name) {
  static constexpr std::array<std::string_view, 5> kLeaders = {"chief", "master", "head",
                                                               "launcher", "coordinator"};
  for (std::string_view leader : kLeaders) {
    if (role_name == leader) return true;
  }
  return false;
}

std::vector<PodSlot> PodSlots(const TrainingJobSpec& spec, int32_t worker_replicas) {
  std::vector<PodSlot> slots;
  int32_t next_rank = 0;
  auto add_role = [&](std::string_view name, int32_t replicas, std::optional<int32_t> procs,
                      const nlohmann::json& tmpl) {
    const int32_t effective_procs = EffectiveProcsPerPod(procs, tmpl);
    for (int32_t i = 0; i < replicas; ++i) {
      slots.push_back(PodSlot{std::string(name), i, next_rank++, effective_procs, &tmpl});
    }
  };
  for (const Role& role : spec.roles) {
    if (IsLeaderRole(role.name))
      add_role(role.name, role.replicas, role.procs_per_pod, role.pod_template);
  }
  add_role(kWorkerRole, worker_replicas, spec.procs_per_pod, spec.pod_template);
  for (const Role& role : spec.roles) {
    if (!IsLeaderRole(role.name))
      add_role(role.name, role.replicas, role.procs_per_pod, role.pod_template);
  }
  return slots;
}

std::string PodName(std::string_view job_name, std::string_view role, int32_t index) {
  std::string name(job_name);
  name += '-';
  name += role;
  name += '-';
  name += std::to_string(index);
  return name;
}

}  // namespace lockstep::api
