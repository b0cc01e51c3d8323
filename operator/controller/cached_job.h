#pragma once
// The informer's compact view of a TrainingJob. Decoding never fails for a bad spec: a spec that
// cannot be decoded (it bypassed the apiserver's schema) is kept as `spec_error`, so the
// controller can report Stalled/InvalidSpec on it instead of losing the object.

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

struct CachedJob {
  kube::ObjectMeta meta;  // the cache key and resourceVersion
  api::TrainingJob job;   // metadata and status always; spec only when spec_error is empty
  std::string spec_error;
};

// Fails only when the metadata itself is unusable.
StatusOr<CachedJob> DecodeCachedJob(const nlohmann::json& object);

// "namespace/name".
std::string JobKey(const std::string& ns, const std::string& name);
// Splits "namespace/name"; false when the key has no '/'.
bool SplitKey(const std::string& key, std::string* ns, std::string* name);

}  // namespace lockstep::controller
