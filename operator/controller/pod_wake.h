#pragma once
// When a pod's change wakes its job: at once, or after a short batch period.
//
// A burst of gangs makes every pod change several times on its way to Running (bound, IP set,
// containers started, Running); each wake is a reconcile and most write status. The Job
// controller of kube-controller-manager batches a job's pod changes for 1 s for the same reason
// (syncJobBatchPeriod). Here only news that is progress waits: a change that can mean a failure
// (a pod going, terminated, restarted, crashing, disrupted) wakes the job at once, so recovery
// never waits for the batch. bench/peers "Burst" has the before and after.

#include <chrono>

#include "operator/kube/objects.h"

namespace lockstep::controller {

// How long a job's progress-only pod changes wait before they wake it (changes within the
// period fold into one reconcile: the work queue holds a key once).
inline constexpr std::chrono::milliseconds kPodBatchPeriod{1000};

// True when `pod` (its state after the change) may be bad news for its job: it is being deleted,
// its phase is neither Pending nor Running, it carries a DisruptionTarget condition, or any of
// its containers restarted, terminated (an init container's exit 0 excepted), or waits for a
// reason other than starting (e.g. CrashLoopBackOff, ImagePullBackOff,
// CreateContainerConfigError). A pod without a phase yet counts as Pending.
bool PodChangeIsUrgent(const kube::Pod& pod);

}  // namespace lockstep::controller
