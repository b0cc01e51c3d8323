#include "operator/controller/cached_job.h"

#include "operator/api/codec.h"
#include "operator/api/resolved_template.h"
#include "common/log.h"

namespace lockstep::controller {

namespace {

// The spec the job runs with: as stored, or merged over its template's snapshot
// (api::SnapshotSpec); a templated job without a snapshot awaits the reconciler's merge.
void DecodeJobSpec(const nlohmann::json& object, const nlohmann::json& spec, CachedJob* out) {
  StatusOr<std::optional<api::TemplateRef>> ref = api::DecodeTemplateRef(spec);
  if (!ref.ok()) {
    out->spec_error = ref.status().message();
    return;
  }
  out->template_ref = *ref;
  if (out->template_ref) {
    out->raw_spec = spec;
    const bool snapshot = object.contains("status") && object["status"].is_object() &&
                          object["status"].contains("resolvedTemplate");
    if (!snapshot) {
      out->awaits_template = true;
      return;
    }
  }
  StatusOr<nlohmann::json> effective = api::SnapshotSpec(object);
  if (!effective.ok()) {
    out->spec_error = "merged with status.resolvedTemplate: " +
                      std::string(effective.status().message());
    return;
  }
  StatusOr<api::TrainingJobSpec> decoded_spec = api::DecodeSpec(*effective);
  if (decoded_spec.ok()) {
    out->job.spec = std::move(decoded_spec).value();
  } else {
    out->spec_error = decoded_spec.status().message();
  }
}

}  // namespace

StatusOr<CachedJob> DecodeCachedJob(const nlohmann::json& object) {
  CachedJob out;
  LS_ASSIGN_OR_RETURN(out.meta, kube::DecodeObjectMeta(object));
  if (!object.is_object() || !object.contains("metadata")) {
    return InvalidArgumentError("trainingjob without metadata");
  }
  LS_ASSIGN_OR_RETURN(out.job.metadata, api::DecodeObjectMeta(object["metadata"]));
  const nlohmann::json null_json;
  const nlohmann::json& spec = object.contains("spec") ? object["spec"] : null_json;
  DecodeJobSpec(object, spec, &out);
  const nlohmann::json& status = object.contains("status") ? object["status"] : null_json;
  api::UnreadStatus unread;
  out.job.status = api::DecodeStatusPartial(status, &unread);
  if (!unread.empty()) {
    for (const std::string& e : unread.errors) {
      out.status_error += (out.status_error.empty() ? "" : "; ") + e;
    }
    out.unread_conditions = std::move(unread.conditions);
    log::Warning("trainingjob status not fully readable; the operator will not act on it",
                 {{"job", out.meta.Key()}, {"error", out.status_error}});
  }
  return out;
}

std::string JobKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

bool SplitKey(const std::string& key, std::string* ns, std::string* name) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return false;
  *ns = key.substr(0, slash);
  *name = key.substr(slash + 1);
  return true;
}

}  // namespace lockstep::controller
