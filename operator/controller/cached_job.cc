#include "operator/controller/cached_job.h"

#include "operator/api/codec.h"
#include "common/log.h"

namespace lockstep::controller {

StatusOr<CachedJob> DecodeCachedJob(const nlohmann::json& object) {
  CachedJob out;
  LS_ASSIGN_OR_RETURN(out.meta, kube::DecodeObjectMeta(object));
  if (!object.is_object() || !object.contains("metadata")) {
    return InvalidArgumentError("trainingjob without metadata");
  }
  LS_ASSIGN_OR_RETURN(out.job.metadata, api::DecodeObjectMeta(object["metadata"]));
  const nlohmann::json null_json;
  const nlohmann::json& spec = object.contains("spec") ? object["spec"] : null_json;
  StatusOr<api::TrainingJobSpec> decoded_spec = api::DecodeSpec(spec);
  if (decoded_spec.ok()) {
    out.job.spec = std::move(decoded_spec).value();
  } else {
    out.spec_error = decoded_spec.status().message();
  }
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
