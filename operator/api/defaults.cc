#include "operator/api/defaults.h"

#include <charconv>

#include "operator/api/ranks.h"

namespace lockstep::api {

using nlohmann::json;

namespace {

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// Extended resources are whole numbers; the apiserver writes them as strings ("8") but a
// hand-written object may hold a JSON number.
std::optional<int32_t> WholeQuantity(const json& q) {
  if (q.is_number_integer()) {
    const int64_t v = q.get<int64_t>();
    if (v >= 0 && v <= INT32_MAX) return static_cast<int32_t>(v);
    return std::nullopt;
  }
  if (!q.is_string()) return std::nullopt;
  const std::string& s = q.get_ref<const std::string&>();
  int32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<int32_t> GpusIn(const json& resources, std::string_view kind) {
  auto list = resources.find(kind);
  if (list == resources.end() || !list->is_object()) return std::nullopt;
  auto gpu = list->find(kGpuResource);
  if (gpu == list->end()) return std::nullopt;
  return WholeQuantity(*gpu);
}

}  // namespace

int32_t TrainerGpuCount(const json& pod_template) {
  const json* containers = nullptr;
  if (pod_template.is_object() && pod_template.contains("spec") &&
      pod_template["spec"].is_object() && pod_template["spec"].contains("containers")) {
    containers = &pod_template["spec"]["containers"];
  }
  if (containers == nullptr || !containers->is_array() || containers->empty()) return 0;
  const json& trainer = (*containers)[0];
  if (!trainer.is_object() || !trainer.contains("resources")) return 0;
  const json& resources = trainer["resources"];
  if (!resources.is_object()) return 0;
  // Limits first: for extended resources requests default to limits, and must equal them.
  if (std::optional<int32_t> n = GpusIn(resources, "limits")) return *n;
  return GpusIn(resources, "requests").value_or(0);
}

int32_t EffectiveProcsPerPod(std::optional<int32_t> procs_per_pod, const json& pod_template) {
  if (procs_per_pod && *procs_per_pod > 0) return *procs_per_pod;
  const int32_t gpus = TrainerGpuCount(pod_template);
  return gpus > 0 ? gpus : 1;
}

std::vector<std::string> EffectiveSuccessRoles(const TrainingJobSpec& spec) {
  if (spec.success_policy && !spec.success_policy->target_roles.empty()) {
    return spec.success_policy->target_roles;
  }
  for (const Role& role : spec.roles) {
    if (IsLeaderRole(role.name)) return {role.name};
  }
  return {std::string(kWorkerRole)};
}

void ApplyDefaults(TrainingJobSpec* spec) {
  spec->procs_per_pod = EffectiveProcsPerPod(spec->procs_per_pod, spec->pod_template);
  for (Role& role : spec->roles) {
    role.procs_per_pod = EffectiveProcsPerPod(role.procs_per_pod, role.pod_template);
  }
  if (!spec->success_policy) spec->success_policy = SuccessPolicy{};
  spec->success_policy->target_roles = EffectiveSuccessRoles(*spec);
}

}  // namespace lockstep::api
