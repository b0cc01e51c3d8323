#pragma once
// The one JSON <-> C++ codec for TrainingJob. Decoding validates shapes and types only (each
// error names the field by its full path); the semantic rules the CRD's CEL expressions enforce
// live in validation.h. Nothing here throws.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/api/types.h"

namespace lockstep::api {

StatusOr<TrainingJob> DecodeTrainingJob(const nlohmann::json& object);
StatusOr<TrainingJobSpec> DecodeSpec(const nlohmann::json& spec);
StatusOr<TrainingJobStatus> DecodeStatus(const nlohmann::json& status);

// What DecodeStatusPartial could not read.
struct UnreadStatus {
  std::vector<std::string> errors;           // one per field or list element skipped, with path
  std::vector<nlohmann::json> conditions;    // the condition elements skipped, as stored
  bool empty() const { return errors.empty(); }
};
// Decodes every field of a status it can read and skips the rest, saying what in `unread`: a
// status written by a newer operator, or stored before a CRD rule existed, loses one field, not
// every counter (the controller must then not act on it: see cached_job.h). DecodeStatus is the
// strict form: the first error, or the whole status.
TrainingJobStatus DecodeStatusPartial(const nlohmann::json& status, UnreadStatus* unread);
StatusOr<ObjectMeta> DecodeObjectMeta(const nlohmann::json& metadata);

// Encodes the whole object (apiVersion, kind, metadata, spec, status). Unset optionals and empty
// strings/lists are omitted, so encode(decode(x)) is x plus the schema defaults.
nlohmann::json EncodeTrainingJob(const TrainingJob& job);
nlohmann::json EncodeSpec(const TrainingJobSpec& spec);
// The status as the /status subresource stores it. Writes the derived restarts.total too.
nlohmann::json EncodeStatus(const TrainingJobStatus& status);
// Every restart the job went through, of any cause and mode: gang restarts (one per attempt
// after the first) plus in-place restarts (which keep the attempt). Saturates at INT32_MAX.
int32_t TotalRestarts(const TrainingJobStatus& status);
// status.displayState, the STATE column (derived, written by EncodeStatus): the state, except that
// a job not yet running (Pending, Scheduling, Restarting) whose StartupFailing condition is True
// shows that condition's reason, as `kubectl get pods` shows ImagePullBackOff for a Pending pod:
// the reason a job cannot start is on the default table, not only in `-o wide` (issue 45 item 2).
// Empty when the state is unset.
std::string DisplayState(const TrainingJobStatus& status);
nlohmann::json EncodeObjectMeta(const ObjectMeta& meta);
nlohmann::json EncodeCondition(const Condition& condition);
// status.progress and status.goodput (parts of EncodeStatus).
nlohmann::json EncodeProgress(const JobProgress& progress);
nlohmann::json EncodeGoodput(const JobGoodput& goodput);
// status.capacity as the scheduler applies it (EncodeStatus leaves it out: not the controller's).
nlohmann::json EncodeCapacity(const Capacity& capacity);

}  // namespace lockstep::api
