#pragma once
// The agent's --state-dir: pod directories (volumes, logs, /etc/hosts, termination messages,
// container bundles), the image store, runc's state, the list of host paths it had to create
// as mount targets, the control requests of
// `--fail-node` / `--partition-node`, and the owner's pid. Everything in it, and every path it
// lists, is removed on exit and, after a crash, by the next agent's start.

#include <sys/types.h>

#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

class StateDir {
 public:
  explicit StateDir(std::string root) : root_(std::move(root)) {}

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

  // Makes sure `path` exists on the host (a directory, or an empty file when `file`), creating
  // missing components and recording each so RemoveAll can take them away again.
  Status EnsurePath(const std::string& path, bool file);

 private:
  void RemoveCreatedPaths();

  const std::string root_;
  std::mutex mu_;  // serialises EnsurePath and the created-paths file
};

// Writes the control request `verb` (fail or partition) for `node` into an agent's state dir.
Status RequestNodeControl(const std::string& state_dir, const std::string& node,
                          const std::string& verb);

}  // namespace lockstep::e2e
