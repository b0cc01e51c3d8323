#pragma once
// status.resolvedTemplate: the template a job names in spec.templateRef, as it was when the job
// first created pods (docs/api.md "Templates"). From then on the job's spec is merged over this
// snapshot, never over the live template, so editing or deleting the template changes no
// running job, and every restart of the job uses the same merged spec. The one author is the
// job controller (operator/controller/template_resolve.h).

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::api {

// The condition the template resolution owns: True (Resolved: merged with the live template,
// not started yet; Snapshotted: merged with status.resolvedTemplate), False (TemplateNotFound:
// the job waits for it).
inline constexpr std::string_view kConditionTemplateReady = "TemplateReady";
inline constexpr std::string_view kReasonTemplateResolved = "Resolved";
inline constexpr std::string_view kReasonTemplateSnapshotted = "Snapshotted";
inline constexpr std::string_view kReasonTemplateNotFound = "TemplateNotFound";

struct ResolvedTemplate {
  std::string kind;  // ClusterTrainingTemplate | TrainingTemplate
  std::string name;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::chrono::system_clock::time_point time{};     // when the snapshot was taken
  nlohmann::json spec = nlohmann::json::object();  // the template's .spec, as it was

  friend bool operator==(const ResolvedTemplate&, const ResolvedTemplate&) = default;
};

// status.resolvedTemplate of `status` into *out (absent: left unset); errors name the field.
Status DecodeResolvedTemplate(const nlohmann::json& status, std::optional<ResolvedTemplate>* out);
nlohmann::json EncodeResolvedTemplate(const ResolvedTemplate& resolved);

// The spec a stored TrainingJob runs with: its .spec when it names no template; merged over
// status.resolvedTemplate.spec when it names one and has the snapshot; FailedPrecondition when
// it names one and has none yet (only the job controller merges a live template). Errors of the
// merge name the field.
StatusOr<nlohmann::json> SnapshotSpec(const nlohmann::json& object);

}  // namespace lockstep::api
