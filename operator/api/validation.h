#pragma once
// The CRD's validation (schema bounds, patterns and CEL rules) in C++, so the operator can
// report a spec that bypassed the apiserver (stored before a rule existed) as Stalled/InvalidSpec
// instead of acting on it. Messages match the CRD's where the CRD has one. docs/api.md lists the
// rules; keep the three in step.

#include <string>
#include <vector>

#include "common/status.h"
#include "operator/api/types.h"

namespace lockstep::api {

// The Pod objects one job may ask the cluster to store: template bytes x pods, summed over the
// workers (at their elastic maximum) and the roles. The operator builds at most one pass's creates
// at a time, but etcd (2 GiB default quota) and every pod watcher hold all of them: a 1 MB
// template x 10,000 replicas is 10 GB. CEL cannot measure an object's bytes, so this one rule has
// no CRD counterpart: a job over it is Stalled/InvalidSpec, and no pod of it is created.
inline constexpr int64_t kMaxPodBytesPerJob = int64_t{256} << 20;

struct FieldError {
  std::string field;  // "spec.elastic.minReplicas"
  std::string message;

  friend bool operator==(const FieldError&, const FieldError&) = default;
};

// Every rule a new object must satisfy. Empty when valid.
std::vector<FieldError> Validate(const TrainingJob& job);

// The transition rules: fields that cannot change after creation.
std::vector<FieldError> ValidateUpdate(const TrainingJob& old_job, const TrainingJob& new_job);

// OK, or InvalidArgument with "field: message; field: message".
Status ToStatus(const std::vector<FieldError>& errors);

}  // namespace lockstep::api
