#include "tests/e2e/agent/state_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "tests/e2e/agent/host_command.h"

namespace lockstep::e2e {

namespace fs = std::filesystem;

Status StateDir::Claim() {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return InternalError("create " + root_ + ": " + ec.message());
  std::ifstream owner(root_ + "/agent.pid");
  pid_t pid = 0;
  int64_t start = 0;
  if (owner >> pid >> start && pid != getpid() && start > 0 && ProcessStartTime(pid) == start) {
    return FailedPreconditionError("state dir " + root_ + " belongs to running agent pid " +
                                   std::to_string(pid));
  }
  RemoveCreatedPaths();
  fs::remove_all(root_ + "/pods", ec);
  fs::remove_all(ControlDir(), ec);
  fs::create_directories(root_ + "/pods", ec);
  fs::create_directories(ControlDir(), ec);
  if (ec) return InternalError("create " + root_ + "/pods: " + ec.message());
  std::ofstream out(root_ + "/agent.pid", std::ios::trunc);
  out << getpid() << " " << ProcessStartTime(getpid()) << "\n";
  if (!out) return InternalError("cannot write " + root_ + "/agent.pid");
  return Status::Ok();
}

void StateDir::RemoveAll() {
  RemoveCreatedPaths();
  std::error_code ec;
  fs::remove_all(root_, ec);
  if (ec) log::Warning("cannot remove the state dir", {{"dir", root_}, {"error", ec.message()}});
}

void StateDir::RemoveCreatedPaths() {
  std::lock_guard<std::mutex> lock(mu_);
  std::ifstream in(root_ + "/created-paths");
  std::vector<std::string> paths;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) paths.push_back(line);
  }
  // Deepest (latest created) first, so a directory is empty by the time its turn comes. Files
  // are the agent's own empty mount targets; a directory that is not empty is left alone.
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(*it, ec))) {
      if (rmdir(it->c_str()) != 0 && errno != ENOENT) {
        log::Warning("created mount target not empty, left in place", {{"path", *it}});
      }
    } else {
      fs::remove(*it, ec);
    }
  }
  fs::remove(root_ + "/created-paths");
}

Status StateDir::EnsurePath(const std::string& path, bool file) {
  std::lock_guard<std::mutex> lock(mu_);
  const fs::path target(path);
  std::error_code ec;
  if (fs::exists(target, ec)) return Status::Ok();
  std::vector<fs::path> missing;
  for (fs::path p = file ? target.parent_path() : target; !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::ofstream record(root_ + "/created-paths", std::ios::app);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, ec) && ec) {
      return InternalError("mkdir " + it->string() + ": " + ec.message());
    }
    record << it->string() << "\n";
  }
  if (file) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return InternalError("create " + path + ": " + strerror(errno));
    if (fd >= 0) {
      close(fd);
      record << path << "\n";
    }
  }
  record.flush();
  if (!record) return InternalError("cannot record created path " + path);
  return Status::Ok();
}

Status RequestNodeControl(const std::string& state_dir, const std::string& node,
                          const std::string& verb) {
  const std::string dir = state_dir + "/control";
  if (!fs::is_directory(dir)) return NotFoundError("no running agent owns " + state_dir);
  std::ofstream out(dir + "/" + node + "." + verb);
  if (!out) return InternalError("cannot write the control request in " + dir);
  return Status::Ok();
}

}  // namespace lockstep::e2e
