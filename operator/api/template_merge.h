#pragma once
// Reusable templates (ClusterTrainingTemplate, TrainingTemplate; docs/api.md "Templates"): a
// TrainingJob that names one in spec.templateRef states only what differs, and its effective
// spec is the template's spec with the job's merged over it. Pure JSON -> JSON, so the same
// merge serves the controller (before DecodeSpec) and the gang scheduler (from the snapshot in
// status.resolvedTemplate).
//
// The merge, the job's side winning (the table in docs/api.md is the contract):
//   - scalars and lists without a key (command, args, tolerations' fields, topologyKeys): the
//     job's value when it states one, else the template's;
//   - objects (resources, nodeSelector, labels, affinity's parts): merged key by key, recursively;
//   - keyed lists, merged element by element like a strategic merge patch: containers,
//     initContainers, ephemeralContainers, volumes, env, imagePullSecrets, resourceClaims (name),
//     ports (containerPort), volumeMounts (mountPath), volumeDevices (devicePath); the template's
//     elements keep their order, the job's new ones follow in its order; a container merges
//     field by field, any other element (an env var, a volume) is replaced whole by the job's;
//   - tolerations: the template's, then the job's that are not already there (a platform's
//     tolerations are meant to add up);
//   - failurePolicy and runPolicy: the apiserver writes the schema's defaults into every job,
//     so a job's value equal to its default cannot be told from an unstated one: it yields to
//     the template's value at that field. failurePolicy.rules: the job's first (first match
//     wins), then the template's whose name the job does not use. runPolicy.suspend is the
//     job's alone (Kueue sets it).
//   - replicas, roles, elastic, successPolicy: the job's alone (a template has no such field).
// Errors (InvalidArgument) name the field: a keyed list element without its key, a field of the
// wrong type in either side. Nothing throws; neither input is changed.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::api {

inline constexpr std::string_view kClusterTrainingTemplateKind = "ClusterTrainingTemplate";
inline constexpr std::string_view kTrainingTemplateKind = "TrainingTemplate";
inline constexpr std::string_view kClusterTrainingTemplatePlural = "clustertrainingtemplates";
inline constexpr std::string_view kTrainingTemplatePlural = "trainingtemplates";

// spec.templateRef: {kind (default ClusterTrainingTemplate), name}. A TrainingTemplate is looked
// up in the job's namespace.
struct TemplateRef {
  std::string kind = std::string(kClusterTrainingTemplateKind);
  std::string name;

  bool cluster_scoped() const { return kind == kClusterTrainingTemplateKind; }
  friend bool operator==(const TemplateRef&, const TemplateRef&) = default;
};

// The job spec's templateRef; nullopt when it has none; an error naming the field when it is
// malformed (not an object, no name, an unknown kind).
StatusOr<std::optional<TemplateRef>> DecodeTemplateRef(const nlohmann::json& job_spec);

// "ClusterTrainingTemplate/pytorch-8gpu".
std::string Describe(const TemplateRef& ref);

// The job's effective spec: `template_spec` (a template's .spec) with `job_spec` (the job's .spec,
// as stored) merged over it as above, without templateRef. Fields of the template spec the
// merge does not know are errors (a newer template CRD than this operator).
StatusOr<nlohmann::json> MergeTemplateSpec(const nlohmann::json& template_spec,
                                           const nlohmann::json& job_spec);

}  // namespace lockstep::api
