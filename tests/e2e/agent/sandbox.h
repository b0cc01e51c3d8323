#pragma once
// The pod sandbox and its container processes, kubelet style without a runtime.
//
// StartPause forks the pod's "pause" process: it joins the pod's network namespace, unshares a
// mount and a UTS namespace, makes every mount private (nothing propagates back to the host),
// bind-mounts the pod's own /tmp, its volumes and /etc/hosts, sets the hostname, and then sleeps. Every
// container process enters those three namespaces (setns), so all containers of a pod share one
// filesystem view, one hostname and one network stack, and the mounts vanish with the last
// process of the pod. A container additionally gets its own mount namespace on top (a child of
// the pod's) only to bind its termination-message file at its terminationMessagePath.
//
// Mount sources are host paths, resolved in the host's mount namespace (cloned as detached trees
// before the child enters the pod's), so a source under the host's /tmp still works once the
// pod's /tmp covers it. Mount targets must exist before the fork (no allocation after fork in a
// threaded program): PodVolumes::Mounts creates missing ones (on the host, recorded in the state
// dir so the agent removes them on exit; under /tmp, in the pod's own /tmp).

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

struct BindMount {
  std::string source;  // host path
  std::string target;  // path inside the pod
  bool read_only = false;
};

struct PauseSpec {
  std::string netns_path;
  std::string hostname;
  std::vector<BindMount> mounts;  // in order (a parent directory before what lies under it)
};

// Returns the pause process's pid once the sandbox is fully set up.
StatusOr<pid_t> StartPause(const PauseSpec& spec);

struct ContainerSpec {
  pid_t pause_pid = 0;
  std::vector<std::string> argv;  // argv[0] is looked up on the PATH given in env
  std::vector<std::string> env;   // KEY=VALUE
  std::string working_dir;        // "" = /
  std::string log_file;           // stdout and stderr (appended)
  BindMount termination_log;      // the per-container file at terminationMessagePath
  // False for a container runtime (runc, oci_runtime.h): the process joins only the pod's
  // network namespace, so the pod's teardown finds it, and its runtime spec does the rest.
  bool join_pod_mounts = true;
};

// Starts a container process (its own process group) inside the pod's namespaces. Returns once
// exec succeeded; a setup or exec failure is returned as an error naming the failing step.
StatusOr<pid_t> StartContainer(const ContainerSpec& spec);

}  // namespace lockstep::e2e
