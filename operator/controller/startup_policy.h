#pragma once
// Startup failures (issue 45): a pod of the current attempt whose container waits with a reason
// the kubelet does not get past by itself. The plan shows it at once (the StartupFailing
// condition, api/conditions.h, and status.reason/message) and ends the attempt once it has lasted
// spec.runPolicy.startupTimeoutSeconds (timers.h CheckStartupTimeout, failure_policy.h
// StartupTimeoutFailure). Pure; table-tested in tests/unit/controller/startup_policy_test.cc.
//
// What counts: a container waiting with one of kStartupFailureReasons in a pod of the attempt
// that is neither terminal nor being deleted; init containers first (one that fails blocks the
// rest), then the others, each list in the pod's order. Init containers of a Running pod are left
// out: the ordinary ones ran to completion, so one waiting there is a sidecar (restartPolicy
// Always) that started once, and its crash loop is not the job failing to start.
// Which pod is named: the first in (name length, name) order, so worker-2 comes before worker-10
// and every pass names the same pod (a message that changed each pass would be a status write).
// A crash loop runs between its waits (a CrashLoopBackOff container runs, or has just terminated,
// between two back-offs): a StartupFailing already True is kept as it was while a Pending pod of
// the attempt has a container that restarted (restartCount > 0), so its timer does not start over
// at every run. It never turns True on a restart count alone.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

// The waiting reasons that mean "cannot start": the kubelet retries them with a back-off, or
// (InvalidImageName, CreateContainerConfigError) only waits for someone to change something.
// ContainerCreating and PodInitializing are on their way up and do not count.
inline constexpr std::string_view kStartupFailureReasons[] = {
    "ImagePullBackOff",           "ErrImagePull",          "InvalidImageName",
    "CreateContainerConfigError", "CreateContainerError",  "RunContainerError",
    "CrashLoopBackOff",
};

bool IsStartupFailureReason(std::string_view reason);

// The kubelet's message is the cluster's text (an image name, a registry's answer): it is cut to
// this many bytes and put on one line before it goes into a condition and a printer column.
inline constexpr size_t kMaxWaitingMessageBytes = 256;
// And the whole StartupFailing message at most this many bytes (plus "...").
inline constexpr size_t kMaxStartupMessageBytes = 1024;

// What StartupFailing says: `reason` is the container's waiting reason, `message`
// "<pod>: <reason>: <kubelet's message> (container <name>)", plus "; <n> more pods failing to
// start" when there are; never over kMaxStartupMessageBytes whatever the pods say.
struct StartupFailure {
  std::string reason;
  std::string message;
  friend bool operator==(const StartupFailure&, const StartupFailure&) = default;
};

// `pods`: the current attempt's. `previous`: the job's StartupFailing condition as the pass has
// it (null when absent). nullopt: nothing fails to start, and the condition goes.
std::optional<StartupFailure> FindStartupFailure(const std::vector<kube::Pod>& pods,
                                                 const api::Condition* previous);

}  // namespace lockstep::controller
