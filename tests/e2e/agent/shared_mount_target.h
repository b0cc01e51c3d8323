#pragma once
// A host path that test node agents use as a mount target (/lockstep/bin, /var/run/lockstep/rdzv,
// /dev/termination-log, a container's workingDir), shared by every agent on the machine: the
// e2e tier runs several side by side (ctest -j), each with an agent of its own.
//
// A pod's mounts live in its private mount namespace, so on the host the target is an empty
// directory (or file) that nothing seems to use. Removing it there is allowed (Linux >= 3.18)
// and lazily detaches the bind mounts on it in every pod that has them: an agent that removed
// the targets it had created when it exited pulled /var/run/lockstep/rdzv from under another
// agent's pods, whose launchers then could not read their rendezvous token (CI of 500bf79,
// framework_graceful_stop_e2e_test). So:
//   - every user holds a shared flock on the path's own lock file (in `lock_dir`, named after
//     the path) for as long as its pods may mount it;
//   - whoever creates a missing component appends it to the path's marker beside the lock;
//   - only a holder that can then take the lock exclusively (no one else holds it) removes the
//     path, and only up to the shallowest component a marker names (what existed stays).
// A crashed holder's lock goes with its process; RemoveIfUnused finishes its cleanup later.

#include <string>

#include "common/status.h"

namespace lockstep::e2e {

inline constexpr char kMountTargetLockDir[] = "/run";

class SharedMountTarget {
 public:
  // Takes the shared lock (waiting while a last holder removes the path) and creates `path` if
  // it is missing: a directory, or an empty file when `file` (its parents as directories).
  static StatusOr<SharedMountTarget> Acquire(const std::string& path, bool file,
                                             const std::string& lock_dir = kMountTargetLockDir);
  // What a crashed holder left: removes what the markers name when no one holds `path`. Returns
  // a problem to report ("" if none).
  static std::string RemoveIfUnused(const std::string& path, bool file,
                                    const std::string& lock_dir = kMountTargetLockDir);
  // Whether any process holds `path` now (for tests that check what an agent left).
  static bool Held(const std::string& path, const std::string& lock_dir = kMountTargetLockDir);

  SharedMountTarget(SharedMountTarget&& other) noexcept;
  SharedMountTarget& operator=(SharedMountTarget&&) = delete;
  ~SharedMountTarget();  // Release()

  // Drops the lock; the last holder removes what was created. Returns a problem to report ("" if
  // none), e.g. a created directory no longer empty. Idempotent.
  std::string Release();

 private:
  SharedMountTarget(std::string path, bool file, std::string marker, int fd)
      : path_(std::move(path)), file_(file), marker_(std::move(marker)), fd_(fd) {}

  std::string path_;
  bool file_ = false;
  std::string marker_;
  int fd_ = -1;
};

}  // namespace lockstep::e2e
