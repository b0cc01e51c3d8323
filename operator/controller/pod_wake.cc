#include "operator/controller/pod_wake.h"

#include <string>
#include <vector>

#include "operator/controller/failure_policy.h"

namespace lockstep::controller {
namespace {

// Waiting reasons of a container that is on its way up, not stuck.
bool StartingReason(const std::string& reason) {
  return reason.empty() || reason == "ContainerCreating" || reason == "PodInitializing";
}

// An init container that ran to completion (exit 0) is progress; a main container that
// terminated is news whatever its code (a failure, or a rank done: the success policy's input).
bool ContainerIsUrgent(const kube::ContainerStatus& c, bool init) {
  if (c.restart_count > 0) return true;
  if (c.state == "terminated") return !(init && c.exit_code.value_or(-1) == 0);
  return c.state == "waiting" && !StartingReason(c.reason);
}

bool AnyUrgent(const std::vector<kube::ContainerStatus>& statuses, bool init) {
  for (const kube::ContainerStatus& c : statuses) {
    if (ContainerIsUrgent(c, init)) return true;
  }
  return false;
}

}  // namespace

bool PodChangeIsUrgent(const kube::Pod& pod) {
  if (pod.meta.deletion_timestamp) return true;
  // "" is a pod the API server has not given a phase yet (Pending for every purpose here).
  if (!pod.phase.empty() && pod.phase != "Pending" && pod.phase != "Running") return true;
  // The failure policy's own test: what it counts as a disruption wakes the job at once.
  if (IsDisrupted(pod)) return true;
  return AnyUrgent(pod.init_container_statuses, true) || AnyUrgent(pod.container_statuses, false);
}

}  // namespace lockstep::controller
