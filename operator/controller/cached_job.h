#pragma once
// The informer's compact view of a TrainingJob. Decoding never fails for a bad spec: a spec that
// cannot be decoded (it bypassed the apiserver's schema) is kept as `spec_error`, so the
// controller can report Stalled/InvalidSpec on it instead of losing the object.
//
// Nor for a bad status: what can be read of it is decoded (api::DecodeStatusPartial) and the
// rest named in `status_error`, with the condition elements it could not read kept as stored.
// The controller never acts on such a status: resetting it (attempt 0, counters 0) made every
// running pod look stale and refilled the restart budget. It reports Stalled/InvalidStatus,
// writing back only the conditions (the unread ones unchanged).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/template_merge.h"
#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

// A job that names a template (spec.templateRef, docs/api.md "Templates") has `template_ref` and
// its spec as stored in `raw_spec`; its `job.spec` is the merge over status.resolvedTemplate once
// that snapshot exists. Before, `job.spec` is empty and `awaits_template` is set: the reconciler
// merges the live template (template_resolve.h) before it plans.
struct CachedJob {
  kube::ObjectMeta meta;  // the cache key and resourceVersion
  api::TrainingJob job;   // metadata and status always; spec only when spec_error is empty
  std::string spec_error;
  std::optional<api::TemplateRef> template_ref;
  nlohmann::json raw_spec;       // only with template_ref
  bool awaits_template = false;  // template_ref without a snapshot yet
  std::string status_error;                         // empty: the whole status was read
  std::vector<nlohmann::json> unread_conditions;    // as stored; see above
};

// Fails only when the metadata itself is unusable.
StatusOr<CachedJob> DecodeCachedJob(const nlohmann::json& object);

// "namespace/name".
std::string JobKey(const std::string& ns, const std::string& name);
// Splits "namespace/name"; false when the key has no '/'.
bool SplitKey(const std::string& key, std::string* ns, std::string* name);

}  // namespace lockstep::controller
