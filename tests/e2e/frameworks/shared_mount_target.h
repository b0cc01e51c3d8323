#pragma once
// The framework e2e binaries run side by side (ctest -j), each with an agent of its own. Every
// pod of a TrainingJob mounts the launcher's emptyDir at /lockstep/bin, a path an agent creates
// on the host when it is missing and removes when it exits: an agent leaving would pull it from
// under the next pod of another agent. So these binaries hold the path themselves while their
// agents run: the first to arrive creates it (and a marker saying so), each holds a shared flock
// on a lock file meanwhile, and the last to leave (the one that then gets the lock exclusively)
// removes what the first created. An agent never creates or removes it: it exists throughout.

#include <string>

#include "common/status.h"

namespace lockstep::e2e {

class SharedMountTarget {
 public:
  // Takes the shared lock (waiting while a last leaver removes the path) and creates `path`
  // (e.g. /lockstep/bin) if it is missing. `lock_dir` holds the lock file and the marker.
  static StatusOr<SharedMountTarget> Acquire(const std::string& path,
                                             const std::string& lock_dir = "/run");
  SharedMountTarget(SharedMountTarget&& other) noexcept;
  SharedMountTarget& operator=(SharedMountTarget&&) = delete;
  ~SharedMountTarget();  // Release()

  // Drops the lock; the last holder removes the created directories. Returns a problem to
  // report ("" if none): created directories that could not be removed. Idempotent.
  std::string Release();

 private:
  SharedMountTarget(std::string path, std::string marker, int fd)
      : path_(std::move(path)), marker_(std::move(marker)), fd_(fd) {}
  std::string path_, marker_;
  int fd_ = -1;
};

}  // namespace lockstep::e2e
