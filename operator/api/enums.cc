#include "operator/api/enums.h"

#include "common/enum_names.h"

namespace lockstep::api {
namespace {

// One table per enum (common/enum_names.h) keeps ToString and Parse in step.
constexpr NameTable<Framework, 6> kFrameworks = {{{Framework::kPyTorch, "PyTorch"},
                                                  {Framework::kTensorFlow, "TensorFlow"},
                                                  {Framework::kJAX, "JAX"},
                                                  {Framework::kHorovod, "Horovod"},
                                                  {Framework::kRay, "Ray"},
                                                  {Framework::kGeneric, "Generic"}}};
constexpr NameTable<Framework, 6> kLauncherFrameworks = {{{Framework::kPyTorch, "pytorch"},
                                                          {Framework::kTensorFlow, "tensorflow"},
                                                          {Framework::kJAX, "jax"},
                                                          {Framework::kHorovod, "horovod"},
                                                          {Framework::kRay, "ray"},
                                                          {Framework::kGeneric, "generic"}}};
constexpr NameTable<RestartMode, 2> kRestartModes = {
    {{RestartMode::kInPlace, "InPlace"}, {RestartMode::kRecreate, "Recreate"}}};
constexpr NameTable<CleanPodPolicy, 3> kCleanPodPolicies = {{{CleanPodPolicy::kAll, "All"},
                                                             {CleanPodPolicy::kRunning, "Running"},
                                                             {CleanPodPolicy::kNone, "None"}}};
constexpr NameTable<RuleAction, 3> kRuleActions = {
    {{RuleAction::kFailJob, "FailJob"},
     {RuleAction::kRestartJob, "RestartJob"},
     {RuleAction::kRestartJobAndIgnoreMaxRestarts, "RestartJobAndIgnoreMaxRestarts"}}};
constexpr NameTable<ExitCodeOperator, 2> kExitCodeOperators = {
    {{ExitCodeOperator::kIn, "In"}, {ExitCodeOperator::kNotIn, "NotIn"}}};
constexpr NameTable<SuccessOperator, 2> kSuccessOperators = {
    {{SuccessOperator::kAll, "All"}, {SuccessOperator::kAny, "Any"}}};
constexpr NameTable<JobState, 8> kJobStates = {{{JobState::kPending, "Pending"},
                                                {JobState::kScheduling, "Scheduling"},
                                                {JobState::kRunning, "Running"},
                                                {JobState::kRestarting, "Restarting"},
                                                {JobState::kSucceeded, "Succeeded"},
                                                {JobState::kFailed, "Failed"},
                                                {JobState::kSuspended, "Suspended"},
                                                {JobState::kQueued, "Queued"}}};
constexpr NameTable<ConditionStatus, 3> kConditionStatuses = {
    {{ConditionStatus::kTrue, "True"},
     {ConditionStatus::kFalse, "False"},
     {ConditionStatus::kUnknown, "Unknown"}}};
constexpr NameTable<RestartRequestState, 5> kRestartRequestStates = {
    {{RestartRequestState::kPending, "Pending"},
     {RestartRequestState::kCompleted, "Completed"},
     {RestartRequestState::kFellBack, "FellBack"},
     {RestartRequestState::kRecreated, "Recreated"},
     {RestartRequestState::kSuperseded, "Superseded"}}};

}  // namespace

std::string_view ToString(Framework v) { return NameOf(kFrameworks, v); }
std::string_view ToString(RestartMode v) { return NameOf(kRestartModes, v); }
std::string_view ToString(CleanPodPolicy v) { return NameOf(kCleanPodPolicies, v); }
std::string_view ToString(RuleAction v) { return NameOf(kRuleActions, v); }
std::string_view ToString(ExitCodeOperator v) { return NameOf(kExitCodeOperators, v); }
std::string_view ToString(SuccessOperator v) { return NameOf(kSuccessOperators, v); }
std::string_view ToString(JobState v) { return NameOf(kJobStates, v); }
std::string_view ToString(ConditionStatus v) { return NameOf(kConditionStatuses, v); }
std::string_view ToString(RestartRequestState v) { return NameOf(kRestartRequestStates, v); }

std::optional<Framework> ParseFramework(std::string_view s) { return ValueOf(kFrameworks, s); }
std::optional<RestartMode> ParseRestartMode(std::string_view s) {
  return ValueOf(kRestartModes, s);
}
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view s) {
  return ValueOf(kCleanPodPolicies, s);
}
std::optional<RuleAction> ParseRuleAction(std::string_view s) { return ValueOf(kRuleActions, s); }
std::optional<ExitCodeOperator> ParseExitCodeOperator(std::string_view s) {
  return ValueOf(kExitCodeOperators, s);
}
std::optional<SuccessOperator> ParseSuccessOperator(std::string_view s) {
  return ValueOf(kSuccessOperators, s);
}
std::optional<JobState> ParseJobState(std::string_view s) { return ValueOf(kJobStates, s); }
std::optional<ConditionStatus> ParseConditionStatus(std::string_view s) {
  return ValueOf(kConditionStatuses, s);
}
std::optional<RestartRequestState> ParseRestartRequestState(std::string_view s) {
  return ValueOf(kRestartRequestStates, s);
}

std::string_view LauncherFrameworkName(Framework v) { return NameOf(kLauncherFrameworks, v); }

}  // namespace lockstep::api
