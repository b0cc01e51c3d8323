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

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

struct CachedJob {
  kube::ObjectMeta meta;  // the cache key and resourceVersion
  api::TrainingJob job;   // metadata and status always; spec only when spec_error is empty
  std::string spec_error;
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
