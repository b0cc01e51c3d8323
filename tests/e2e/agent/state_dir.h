#pragma once
// The agent's --state-dir: pod directories (volumes, logs, /etc/hosts, termination messages,
// container bundles), the image store, runc's state, the list of host paths it holds as mount
// targets, the control requests of
// `--fail-node` / `--partition-node`, and the owner's pid. Everything in it is removed on exit and,
// after a crash, by the next agent's start; so is every path it lists that it created, once no
// other agent holds it.

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/e2e/agent/shared_mount_target.h"

namespace lockstep::e2e {

class StateDir {
 public:
  // `lock_dir` holds the mount targets' locks and markers, shared with every agent on the host
  // (shared_mount_target.h).
  explicit StateDir(std::string root, std::string lock_dir = kMountTargetLockDir)
      : root_(std::move(root)), lock_dir_(std::move(lock_dir)) {}

  // Refuses a directory owned by a live agent; otherwise removes a crashed run's leftovers
  // (created paths, pod directories) and records this process as the owner.
  Status Claim();
  // Removes every path this run (or a crashed one) created, and the directory itself.
  void RemoveAll();

  const std::string& root() const { return root_; }
  std::string PodDir(const std::string& uid) const { return root_ + "/pods/" + uid; }
  std::string ControlDir() const { return root_ + "/control"; }
  // The image store (oci_image_store.h) and runc's state (oci_runtime.h); Claim keeps both.
  std::string ImagesDir() const { return root_ + "/images"; }
  std::string RuncDir() const { return root_ + "/runc"; }

  // Makes sure `path` exists on the host (a directory, or an empty file when `file`) and holds
  // it until RemoveAll: other agents' pods may mount the same path, so it is removed only by
  // the last agent to let go, and only what an agent created (shared_mount_target.h). The path
  // is recorded in the state dir first, so the next Claim after a crash can finish the job.
  Status EnsurePath(const std::string& path, bool file);

 private:
  void RemoveCreatedPaths();

  const std::string root_;
  const std::string lock_dir_;
  std::mutex mu_;  // serialises EnsurePath, held_ and the created-paths file
  std::map<std::string, SharedMountTarget> held_;
};

// Writes the control request `verb` (fail or partition) for `node` into an agent's state dir.
Status RequestNodeControl(const std::string& state_dir, const std::string& node,
                          const std::string& verb);

}  // namespace lockstep::e2e
