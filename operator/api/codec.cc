// TrainingJob and ObjectMeta <-> JSON (see codec.h). Spec and status live in spec_codec.cc and
// status_codec.cc.

#include "operator/api/codec.h"

#include "operator/api/json_fields.h"
#include "operator/api/time.h"

namespace lockstep::api {

using internal::Member;
using internal::MissingError;
using internal::ReadInt64;
using internal::ReadOptTime;
using internal::ReadString;
using internal::ReadStringMap;
using internal::TypeError;
using nlohmann::json;

StatusOr<ObjectMeta> DecodeObjectMeta(const json& metadata) {
  if (!metadata.is_object()) return TypeError("metadata", "an object", metadata);
  ObjectMeta out;
  LS_RETURN_IF_ERROR(ReadString(metadata, "name", "metadata", &out.name));
  LS_RETURN_IF_ERROR(ReadString(metadata, "namespace", "metadata", &out.namespace_name));
  LS_RETURN_IF_ERROR(ReadString(metadata, "uid", "metadata", &out.uid));
  LS_RETURN_IF_ERROR(ReadString(metadata, "resourceVersion", "metadata", &out.resource_version));
  LS_RETURN_IF_ERROR(ReadInt64(metadata, "generation", "metadata", &out.generation));
  LS_RETURN_IF_ERROR(
      ReadOptTime(metadata, "creationTimestamp", "metadata", &out.creation_timestamp));
  LS_RETURN_IF_ERROR(
      ReadOptTime(metadata, "deletionTimestamp", "metadata", &out.deletion_timestamp));
  LS_RETURN_IF_ERROR(ReadStringMap(metadata, "labels", "metadata", &out.labels));
  LS_RETURN_IF_ERROR(ReadStringMap(metadata, "annotations", "metadata", &out.annotations));
  return out;
}

StatusOr<TrainingJob> DecodeTrainingJob(const json& object) {
  // The readers never throw, but nlohmann can for inputs nobody foresaw; the adapter is where
  // such exceptions become values.
  try {
    if (!object.is_object()) return TypeError("(object)", "an object", object);
    std::string api_version, kind;
    LS_RETURN_IF_ERROR(ReadString(object, "apiVersion", "", &api_version));
    LS_RETURN_IF_ERROR(ReadString(object, "kind", "", &kind));
    if (!api_version.empty() && api_version != kApiVersion) {
      return InvalidArgumentError("apiVersion: expected " + std::string(kApiVersion) + ", got " +
                                  api_version);
    }
    if (!kind.empty() && kind != kKind) {
      return InvalidArgumentError("kind: expected TrainingJob, got " + kind);
    }
    TrainingJob job;
    const json* metadata = Member(object, "metadata");
    if (metadata == nullptr) return MissingError("metadata");
    LS_ASSIGN_OR_RETURN(job.metadata, DecodeObjectMeta(*metadata));
    const json* spec = Member(object, "spec");
    if (spec == nullptr) return MissingError("spec");
    LS_ASSIGN_OR_RETURN(job.spec, DecodeSpec(*spec));
    const json* status = Member(object, "status");
    if (status != nullptr) {
      LS_ASSIGN_OR_RETURN(job.status, DecodeStatus(*status));
    }
    return job;
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("malformed TrainingJob: ") + e.what());
  }
}

json EncodeObjectMeta(const ObjectMeta& meta) {
  json out = {{"name", meta.name}};
  if (!meta.namespace_name.empty()) out["namespace"] = meta.namespace_name;
  if (!meta.uid.empty()) out["uid"] = meta.uid;
  if (!meta.resource_version.empty()) out["resourceVersion"] = meta.resource_version;
  if (meta.generation != 0) out["generation"] = meta.generation;
  if (meta.creation_timestamp) out["creationTimestamp"] = FormatTime(*meta.creation_timestamp);
  if (meta.deletion_timestamp) out["deletionTimestamp"] = FormatTime(*meta.deletion_timestamp);
  if (!meta.labels.empty()) out["labels"] = meta.labels;
  if (!meta.annotations.empty()) out["annotations"] = meta.annotations;
  return out;
}

json EncodeTrainingJob(const TrainingJob& job) {
  return {{"apiVersion", kApiVersion},
          {"kind", kKind},
          {"metadata", EncodeObjectMeta(job.metadata)},
          {"spec", EncodeSpec(job.spec)},
          {"status", EncodeStatus(job.status)}};
}

}  // namespace lockstep::api
