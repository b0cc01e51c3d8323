#include "tests/e2e/frameworks/shared_mount_target.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace lockstep::e2e {

namespace fs = std::filesystem;

StatusOr<SharedMountTarget> SharedMountTarget::Acquire(const std::string& path,
                                                       const std::string& lock_dir) {
  const std::string base = lock_dir + "/lockstep-fw-e2e-mount-target";
  const int fd = open((base + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return InternalError("open " + base + ".lock: " + std::strerror(errno));
  while (flock(fd, LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    close(fd);
    return InternalError("flock " + base + ".lock: " + std::strerror(err));
  }
  SharedMountTarget target(path, base + ".created", fd);
  // The first component that is missing is the top of what we create (e.g. /lockstep).
  fs::path top;
  for (fs::path p = path; !p.empty() && p != p.parent_path() && !fs::exists(p);
       p = p.parent_path()) {
    top = p;
  }
  if (top.empty()) return target;
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return InternalError("create " + path + ": " + ec.message());
  // Several first arrivals may race here; they write the same marker.
  std::ofstream(target.marker_) << top.string() << "\n";
  return target;
}

SharedMountTarget::SharedMountTarget(SharedMountTarget&& other) noexcept
    : path_(std::move(other.path_)), marker_(std::move(other.marker_)), fd_(other.fd_) {
  other.fd_ = -1;
}

SharedMountTarget::~SharedMountTarget() { Release(); }

std::string SharedMountTarget::Release() {
  if (fd_ < 0) return "";
  std::string problem;
  // Exclusive only when no other binary holds the lock: then this is the last one out.
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    std::string top;
    std::getline(std::ifstream(marker_), top);
    if (!top.empty()) {
      // Empty directories only, deepest first, up to the top this run created.
      for (fs::path p = path_; !p.empty(); p = p.parent_path()) {
        if (rmdir(p.c_str()) != 0 && errno != ENOENT) {
          problem = "cannot remove the created mount target " + p.string() + ": " +
                    std::strerror(errno);
          break;
        }
        if (p == fs::path(top)) break;
      }
      std::error_code ec;
      fs::remove(marker_, ec);
    }
  }
  close(fd_);
  fd_ = -1;
  return problem;
}

}  // namespace lockstep::e2e
