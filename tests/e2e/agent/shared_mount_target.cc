#include "tests/e2e/agent/shared_mount_target.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace lockstep::e2e {

namespace fs = std::filesystem;

namespace {

// The lock and marker files of `path` share this prefix: the path's characters outside
// [A-Za-z0-9._-] are written %XX, so two paths never share a lock.
std::string FileBase(const std::string& lock_dir, const std::string& path) {
  std::string name = "lockstep-mount-target.";
  for (const unsigned char c : path) {
    if (std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      name += hex;
    }
  }
  return lock_dir + "/" + name;
}

StatusOr<int> OpenLock(const std::string& base) {
  const int fd = open((base + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return InternalError("open " + base + ".lock: " + std::strerror(errno));
  return fd;
}

// Creates what is missing of `path` and appends the shallowest component this call created to
// the marker. Creators racing under the shared lock each append theirs (O_APPEND); the
// shallowest line of all is where removal stops.
Status CreateMissing(const std::string& path, bool file, const std::string& marker) {
  const fs::path target(path);
  std::vector<fs::path> missing;  // deepest first
  std::error_code ec;
  for (fs::path p = file ? target.parent_path() : target;
       !p.empty() && p != p.parent_path() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
  }
  std::string shallowest;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (fs::create_directory(*it, ec)) {
      if (shallowest.empty()) shallowest = it->string();
    } else if (ec) {
      return InternalError("mkdir " + it->string() + ": " + ec.message());
    }
  }
  if (file) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return InternalError("create " + path + ": " + strerror(errno));
    if (fd >= 0) {
      close(fd);
      if (shallowest.empty()) shallowest = path;
    }
  }
  if (shallowest.empty()) return Status::Ok();
  std::ofstream out(marker, std::ios::app);
  out << shallowest << "\n";
  out.flush();
  if (!out) return InternalError("cannot record the created mount target in " + marker);
  return Status::Ok();
}

// Called holding the lock exclusively. Removes `path` and its parents up to the shallowest
// component the marker names (none named: nothing was created, nothing is removed). A
// directory that is not empty stops the removal and keeps the marker, so a later last holder
// tries again.
std::string RemoveCreated(const std::string& path, bool file, const std::string& marker) {
  std::ifstream in(marker);
  std::string top;
  for (std::string line; std::getline(in, line);) {
    const bool inside = path == line || path.rfind(line + "/", 0) == 0;
    if (inside && (top.empty() || line.size() < top.size())) top = line;
  }
  std::error_code ec;
  if (top.empty()) {
    fs::remove(marker, ec);
    return "";
  }
  for (fs::path p = path; !p.empty() && p != p.parent_path(); p = p.parent_path()) {
    const int rc = file && p == fs::path(path) ? unlink(p.c_str()) : rmdir(p.c_str());
    if (rc != 0 && errno != ENOENT) {
      return "cannot remove the created mount target " + p.string() + ": " + std::strerror(errno);
    }
    if (p == fs::path(top)) break;
  }
  fs::remove(marker, ec);
  return "";
}

// True when this call got `fd`'s lock exclusively: no other open file holds it.
bool TakeExclusive(int fd) { return flock(fd, LOCK_EX | LOCK_NB) == 0; }

}  // namespace

StatusOr<SharedMountTarget> SharedMountTarget::Acquire(const std::string& path, bool file,
                                                       const std::string& lock_dir) {
  const std::string base = FileBase(lock_dir, path);
  LS_ASSIGN_OR_RETURN(const int fd, OpenLock(base));
  while (flock(fd, LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    close(fd);
    return InternalError("flock " + base + ".lock: " + std::strerror(err));
  }
  SharedMountTarget target(path, file, base + ".created", fd);
  LS_RETURN_IF_ERROR(CreateMissing(path, file, target.marker_));  // failed: ~ releases
  return target;
}

std::string SharedMountTarget::RemoveIfUnused(const std::string& path, bool file,
                                              const std::string& lock_dir) {
  const std::string base = FileBase(lock_dir, path);
  StatusOr<int> fd = OpenLock(base);
  if (!fd.ok()) return fd.status().ToString();
  std::string problem;
  if (TakeExclusive(*fd)) problem = RemoveCreated(path, file, base + ".created");
  close(*fd);
  return problem;
}

bool SharedMountTarget::Held(const std::string& path, const std::string& lock_dir) {
  StatusOr<int> fd = OpenLock(FileBase(lock_dir, path));
  if (!fd.ok()) return false;
  const bool held = !TakeExclusive(*fd);
  close(*fd);
  return held;
}

SharedMountTarget::SharedMountTarget(SharedMountTarget&& other) noexcept
    : path_(std::move(other.path_)),
      file_(other.file_),
      marker_(std::move(other.marker_)),
      fd_(other.fd_) {
  other.fd_ = -1;
}

SharedMountTarget::~SharedMountTarget() { Release(); }

std::string SharedMountTarget::Release() {
  if (fd_ < 0) return "";
  // Shared to exclusive without waiting: it succeeds only for the last one out (the conversion
  // drops our shared lock either way; closing would too).
  std::string problem;
  if (TakeExclusive(fd_)) problem = RemoveCreated(path_, file_, marker_);
  close(fd_);
  fd_ = -1;
  return problem;
}

}  // namespace lockstep::e2e
