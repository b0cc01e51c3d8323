#pragma once
// The TrainingJob API's enumerations and their names as the API spells them.

#include <optional>
#include <string_view>

namespace lockstep::api {

enum class Framework { kPyTorch, kTensorFlow, kJAX, kHorovod, kRay, kGeneric };
enum class RestartMode { kInPlace, kRecreate };
enum class CleanPodPolicy { kAll, kRunning, kNone };
enum class RuleAction { kFailJob, kRestartJob, kRestartJobAndIgnoreMaxRestarts };
enum class ExitCodeOperator { kIn, kNotIn };
enum class SuccessOperator { kAll, kAny };
enum class JobState {
  kPending,
  kScheduling,
  kRunning,
  kRestarting,
  kSucceeded,
  kFailed,
  kSuspended,
  kQueued  // Kueue has not admitted the job (docs/queues.md)
};
enum class ConditionStatus { kTrue, kFalse, kUnknown };
// status.restartRequest.state (docs/failures.md "Requested restarts").
enum class RestartRequestState { kPending, kCompleted, kFellBack, kRecreated, kSuperseded };

// Names as the API spells them ("PyTorch", "InPlace", ...), and their inverses (nullopt for a
// name the API does not define).
std::string_view ToString(Framework v);
std::string_view ToString(RestartMode v);
std::string_view ToString(CleanPodPolicy v);
std::string_view ToString(RuleAction v);
std::string_view ToString(ExitCodeOperator v);
std::string_view ToString(SuccessOperator v);
std::string_view ToString(JobState v);
std::string_view ToString(ConditionStatus v);
std::string_view ToString(RestartRequestState v);
std::optional<Framework> ParseFramework(std::string_view s);
std::optional<RestartMode> ParseRestartMode(std::string_view s);
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view s);
std::optional<RuleAction> ParseRuleAction(std::string_view s);
std::optional<ExitCodeOperator> ParseExitCodeOperator(std::string_view s);
std::optional<SuccessOperator> ParseSuccessOperator(std::string_view s);
std::optional<JobState> ParseJobState(std::string_view s);
std::optional<ConditionStatus> ParseConditionStatus(std::string_view s);
std::optional<RestartRequestState> ParseRestartRequestState(std::string_view s);

// The launcher's --framework value for a framework ("pytorch", ..., "generic").
std::string_view LauncherFrameworkName(Framework v);

}  // namespace lockstep::api
