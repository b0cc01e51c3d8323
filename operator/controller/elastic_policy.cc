#include "operator/controller/elastic_policy.h"

#include <algorithm>

#include "operator/api/capacity.h"

namespace lockstep::controller {
namespace {

// The scheduler's figure, if it was computed for the current attempt.
std::optional<int32_t> FreshFeasible(const api::TrainingJob& job) {
  const std::optional<api::Capacity>& c = job.status.capacity;
  if (!c) return std::nullopt;
  std::optional<api::Time> attempt_start;
  if (job.status.last_restart) attempt_start = job.status.last_restart->time;
  if (!api::ObservedInAttempt(*c, attempt_start)) return std::nullopt;
  return c->feasible_replicas;
}

// A gang shrinks only after waiting this long at its size: the scheduler's first look can
// precede its caches catching up with nodes that just became Ready.
constexpr std::chrono::seconds kScaleDownAfter{5};

std::optional<api::Time> AttemptStart(const api::TrainingJob& job) {
  if (job.status.last_restart) return job.status.last_restart->time;
  return job.metadata.creation_timestamp;
}

int32_t Target(const api::TrainingJob& job) {
  const api::ElasticPolicy& e = *job.spec.elastic;
  return std::clamp(job.spec.replicas, e.min_replicas, std::max(e.min_replicas, e.max_replicas));
}

}  // namespace

int32_t AttemptWorkers(const api::TrainingJob& job) {
  if (!job.spec.elastic) return job.spec.replicas;
  const int32_t target = Target(job);
  if (job.status.replicas <= 0) return target;
  return std::clamp(job.status.replicas, job.spec.elastic->min_replicas, target);
}

ResizeCheck DecideResize(const api::TrainingJob& job, const PodCounts& counts,
                         std::optional<api::Time> running_since, api::Time now) {
  ResizeCheck out;
  if (!job.spec.elastic) return out;
  const int32_t target = Target(job);
  const int32_t size = job.status.replicas > 0 ? job.status.replicas : target;
  if (size > target) {
    out.resize = Resize{target, "Scaled",
                        "spec.replicas is " + std::to_string(target) + ": shrinking from " +
                            std::to_string(size) + " workers"};
    return out;
  }
  const std::optional<int32_t> feasible = FreshFeasible(job);
  if (!feasible) return out;
  const int32_t min = job.spec.elastic->min_replicas;
  const bool waiting = counts.bound < counts.existing || counts.existing == 0;
  if (waiting && !running_since && *feasible >= min && *feasible < size) {
    if (const std::optional<api::Time> start = AttemptStart(job)) {
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - *start);
      if (waited < kScaleDownAfter) {
        out.recheck_after = kScaleDownAfter - waited;
        return out;
      }
    }
    out.resize = Resize{*feasible, "ElasticScaleDown",
                        "only " + std::to_string(*feasible) + " of " + std::to_string(size) +
                            " workers fit the cluster now: restarting at " +
                            std::to_string(*feasible) + " (minReplicas " + std::to_string(min) +
                            ")"};
    return out;
  }
  if (running_since && size < target && *feasible > size) {
    const auto cooldown = std::chrono::seconds(job.spec.elastic->grow_cooldown_seconds);
    const auto ran = std::chrono::duration_cast<std::chrono::seconds>(now - *running_since);
    if (ran < cooldown) {
      out.recheck_after = cooldown - ran;
      return out;
    }
    const int32_t grow_to = std::min(*feasible, target);
    out.resize = Resize{grow_to, "ElasticScaleUp",
                        "capacity for " + std::to_string(grow_to) +
                            " workers is back: growing from " + std::to_string(size)};
  }
  return out;
}

}  // namespace lockstep::controller
