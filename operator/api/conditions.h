#pragma once
// metav1.Condition helpers with the apimachinery semantics (meta.SetStatusCondition):
// lastTransitionTime moves only when the status changes; reason, message and observedGeneration
// are updated in place. Conditions are keyed by type (the CRD's list-map key).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::api {

// Condition types. Scheduled..Suspended describe the job; Reconciling and Stalled are the kstatus
// pair tools like Flux and Argo CD read (Stalled=True: the operator cannot make progress).
inline constexpr std::string_view kConditionScheduled = "Scheduled";
inline constexpr std::string_view kConditionRunning = "Running";
inline constexpr std::string_view kConditionRestarting = "Restarting";
inline constexpr std::string_view kConditionSucceeded = "Succeeded";
inline constexpr std::string_view kConditionFailed = "Failed";
inline constexpr std::string_view kConditionSuspended = "Suspended";
// Only on jobs Kueue manages (docs/queues.md): whether Kueue admitted the job's Workload, and if
// not, Kueue's reason (queue, quota, eviction). The job controller is its one author.
inline constexpr std::string_view kConditionAdmitted = "Admitted";
// Present (True) only while a pod of the current attempt cannot start: a container waits with a
// reason the kubelet does not get past by itself (ImagePullBackOff, CreateContainerConfigError,
// ...; operator/controller/startup_policy.h). Its message names the pod, the reason and the
// kubelet's words; its lastTransitionTime starts spec.runPolicy.startupTimeoutSeconds. Removed
// when nothing fails to start, so that timer starts over. The job controller is its one author.
inline constexpr std::string_view kConditionStartupFailing = "StartupFailing";
inline constexpr std::string_view kConditionReconciling = "Reconciling";
inline constexpr std::string_view kConditionStalled = "Stalled";

// Reason for Stalled=True when the stored spec breaks a rule (it bypassed validation).
inline constexpr std::string_view kReasonInvalidSpec = "InvalidSpec";
// Reason for Stalled=True when the stored status cannot be read (the operator does not act).
inline constexpr std::string_view kReasonInvalidStatus = "InvalidStatus";
// Event reason when the apiserver refuses the job's status write as invalid (422): the problem
// cannot be shown as a condition, so it is shown as an event.
inline constexpr std::string_view kReasonStatusRejected = "StatusRejected";

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type);

// Adds or updates `condition` (matched by type). Its lastTransitionTime is `now` when the type is
// new or its status changed, else the stored one is kept. Returns true if anything changed.
bool SetCondition(std::vector<Condition>* conditions, Condition condition, Time now);

// `message` cut to at most `max_bytes` bytes (then "..." appended), never inside a UTF-8
// sequence: a condition message is JSON and must stay valid.
std::string BoundedMessage(std::string message, size_t max_bytes);

// Removes the condition of `type`; returns true if one was there.
bool RemoveCondition(std::vector<Condition>* conditions, std::string_view type);

}  // namespace lockstep::api
