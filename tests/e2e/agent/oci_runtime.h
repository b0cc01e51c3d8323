#pragma once
// Containers whose image the agent's store holds (oci_image_store.h), run with runc inside the
// pod's sandbox the way a CRI runtime runs them:
//   - a bundle per container under the pod's directory, its root filesystem a copy of the
//     stored one (hard links when the root is read-only, whole files otherwise), so no container
//     changes the stored image or another container's root;
//   - a runtime spec that joins the pod's network and UTS namespaces (the pause process's) and
//     gets its own mount, PID and IPC namespaces; bind-mounts the container's volumeMounts, the
//     pod's /etc/hosts and the termination-message file; starts the image's entrypoint/cmd as
//     Kubernetes combines them with command/args, in the image's env plus the pod's;
//   - the securityContext applied: runAsUser/runAsGroup (else the image's USER), runAsNonRoot,
//     supplementalGroups and fsGroup as extra groups, readOnlyRootFilesystem, capabilities (the
//     runtime's default set, then drop, then add; ALL as Kubernetes reads it),
//     allowPrivilegeEscalation=false as no_new_privs, privileged as every capability.
// Not applied (the agent is a test harness): seccomp and AppArmor profiles, SELinux, procMount,
// resource limits (runc makes each container's cgroups, without limits).
//
// `runc run` stays in the foreground as the container's parent: it forwards signals (SIGTERM on
// deletion) to the container's init and exits with its status (128+n after signal n), so the pod
// worker waits for and signals it like any container process. runc keeps its state in
// <state-dir>/runc; Remove() deletes a container's state and cgroups (`runc delete --force`),
// and RemoveStaleContainers() those of a crashed agent.

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/e2e/agent/oci_image_store.h"
#include "tests/e2e/agent/pod_env.h"
#include "tests/e2e/agent/sandbox.h"

namespace lockstep::e2e {

// One container's part of the pod, everything already resolved by the pod worker.
struct OciContainerSpec {
  std::vector<std::string> command;  // the container's, not yet $(VAR)-expanded
  std::vector<std::string> args;
  EnvList env;  // the pod's env for this container (kubelet order); the image's comes first
  std::string working_dir;
  pid_t pause_pid = 0;            // whose network and UTS namespaces the container joins
  std::vector<BindMount> mounts;  // host path -> container path, in order
  nlohmann::json pod_security;    // spec.securityContext (may be null)
  nlohmann::json security;        // the container's securityContext (may be null)
  std::string passwd;             // the image's /etc/passwd and /etc/group ("" when absent),
  std::string group;              // to resolve user names and the default group
};

// The capabilities a container gets: the runtime's default set, without `drop`, plus `add`
// ("ALL" in drop empties the set, in add fills it; privileged gets all). Sorted CAP_* names.
std::vector<std::string> ContainerCapabilities(const nlohmann::json& security);

// The OCI runtime spec (config.json) of a container of `image` rooted at `rootfs`. Pure.
// INVALID_ARGUMENT: no command (neither the pod nor the image names one), an unknown user name.
// FAILED_PRECONDITION: runAsNonRoot with a root user (the kubelet's CreateContainerConfigError).
StatusOr<nlohmann::json> BuildRuntimeSpec(const ImageConfig& image, const OciContainerSpec& spec,
                                          const std::string& rootfs);

class OciContainer {
 public:
  // `id` names the container to runc; unique on the host ("<pod netns>-<container name>").
  OciContainer(std::string runc_root, std::string bundle_dir, std::string id)
      : runc_root_(std::move(runc_root)), bundle_(std::move(bundle_dir)), id_(std::move(id)) {}

  // Copies the image's root filesystem into the bundle and writes its config.json.
  Status Prepare(const StoredImage& image, const OciContainerSpec& spec);
  // The command that runs the container in the foreground (run it inside the pod's network
  // namespace, so the pod's teardown finds it).
  std::vector<std::string> RunArgv() const;
  // runc's own error when the container failed before its process ran (from runc's log), else
  // "": the pod worker reports it as StartError.
  std::string RuntimeError() const;
  // Deletes runc's state and cgroups for the container and the root filesystem copy.
  void Remove();

  const std::string& id() const { return id_; }

 private:
  const std::string runc_root_;
  const std::string bundle_;
  const std::string id_;
};

// Deletes every container under `runc_root` whose id starts with `prefix`: what a crashed agent
// left (its processes are gone with its network namespaces; this removes state and cgroups).
void RemoveStaleContainers(const std::string& runc_root, const std::string& prefix);

}  // namespace lockstep::e2e
