#include "operator/api/resolved_template.h"

#include "operator/api/json_fields.h"
#include "operator/api/template_merge.h"
#include "operator/api/time.h"

namespace lockstep::api {

using internal::Member;
using internal::TypeError;
using nlohmann::json;

Status DecodeResolvedTemplate(const json& status, std::optional<ResolvedTemplate>* out) {
  const json* r = status.is_object() ? Member(status, "resolvedTemplate") : nullptr;
  if (r == nullptr) return Status::Ok();
  const std::string path = "status.resolvedTemplate";
  if (!r->is_object()) return TypeError(path, "an object", *r);
  ResolvedTemplate resolved;
  LS_RETURN_IF_ERROR(internal::ReadString(*r, "kind", path, &resolved.kind));
  LS_RETURN_IF_ERROR(internal::ReadString(*r, "name", path, &resolved.name));
  LS_RETURN_IF_ERROR(internal::ReadString(*r, "uid", path, &resolved.uid));
  LS_RETURN_IF_ERROR(
      internal::ReadString(*r, "resourceVersion", path, &resolved.resource_version));
  LS_RETURN_IF_ERROR(internal::ReadInt64(*r, "generation", path, &resolved.generation));
  std::optional<std::chrono::system_clock::time_point> time;
  LS_RETURN_IF_ERROR(internal::ReadOptTime(*r, "time", path, &time));
  if (time) resolved.time = *time;
  if (const json* spec = Member(*r, "spec")) {
    if (!spec->is_object()) return TypeError(path + ".spec", "an object", *spec);
    resolved.spec = *spec;
  }
  *out = std::move(resolved);
  return Status::Ok();
}

json EncodeResolvedTemplate(const ResolvedTemplate& r) {
  return {{"kind", r.kind},
          {"name", r.name},
          {"uid", r.uid},
          {"resourceVersion", r.resource_version},
          {"generation", r.generation},
          {"time", FormatTime(r.time)},
          {"spec", r.spec}};
}

StatusOr<json> SnapshotSpec(const json& object) {
  const json* spec = object.is_object() ? Member(object, "spec") : nullptr;
  if (spec == nullptr) return json::object();
  LS_ASSIGN_OR_RETURN(std::optional<TemplateRef> ref, DecodeTemplateRef(*spec));
  if (!ref) return *spec;
  std::optional<ResolvedTemplate> resolved;
  const json* status = Member(object, "status");
  if (status != nullptr) LS_RETURN_IF_ERROR(DecodeResolvedTemplate(*status, &resolved));
  if (!resolved) {
    return FailedPreconditionError("waiting for " + Describe(*ref) +
                                   ": the job has not started with it yet");
  }
  return MergeTemplateSpec(resolved->spec, *spec);
}

}  // namespace lockstep::api
