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
  // A status the operator cannot read is rebuilt from scratch rather than blocking the job.
  const nlohmann::json& status = object.contains("status") ? object["status"] : null_json;
  StatusOr<api::TrainingJobStatus> decoded_status = api::DecodeStatus(status);
  if (decoded_status.ok()) {
    out.job.status = std::move(decoded_status).value();
  } else {
    log::Warning("ignoring undecodable trainingjob status",
                 {{"job", out.meta.Key()}, {"error", decoded_status.status().message()}});
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
