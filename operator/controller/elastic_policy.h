#pragma once
// Elastic jobs (spec.elastic): the world size of the current attempt and when to change it.
// Pure; table-tested in tests/unit/controller/elastic_policy_test.cc.
//
// The size lives in status.replicas (worker pods of the current attempt; the scheduler places
// gangs of that size). The gang scheduler publishes status.capacity.feasibleReplicas, the most
// workers that fit now counting the job's own pods as free. Decisions, each a gang restart that
// consumes no restart budget and waits for no backoff:
//   - Scaled: spec.replicas (kubectl scale) fell below the size: shrink to it.
//   - ElasticScaleDown: the gang has waited for capacity at least 5 s into its attempt and the
//     scheduler says only n in [minReplicas, size) fit: restart at n.
//   - ElasticScaleUp: the gang runs below spec.replicas, the scheduler says more fit, and the
//     attempt has run for spec.elastic.growCooldownSeconds: restart at min(feasible, spec.replicas).
// Capacity older than the current attempt (observedTime before lastRestart.time) is ignored.

#include <chrono>
#include <optional>
#include <string>

#include "operator/api/types.h"
#include "operator/controller/job_status.h"

namespace lockstep::controller {

// Worker pods of the current attempt: spec.replicas for fixed-size jobs; for elastic jobs
// status.replicas once chosen (clamped to [minReplicas, spec.replicas]), else spec.replicas.
int32_t AttemptWorkers(const api::TrainingJob& job);

struct Resize {
  int32_t size = 0;
  std::string reason;   // Scaled, ElasticScaleDown, ElasticScaleUp
  std::string message;
};

struct ResizeCheck {
  std::optional<Resize> resize;
  std::optional<std::chrono::seconds> recheck_after;  // a grow waiting for its cool-down
};

// `counts`: the current attempt's pods; `running_since`: when its gang started running (the
// Running condition's transition), if it runs.
ResizeCheck DecideResize(const api::TrainingJob& job, const PodCounts& counts,
                         std::optional<api::Time> running_since, api::Time now);

}  // namespace lockstep::controller
