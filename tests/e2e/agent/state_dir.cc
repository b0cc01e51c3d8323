#include "tests/e2e/agent/state_dir.h"

#include <unistd.h>

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
  // Deepest first (std::map order reversed: a path sorts after its parents), so a directory
  // is empty by the time its turn comes.
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
    if (std::string problem = it->second.Release(); !problem.empty()) {
      log::Warning("created mount target left in place", {{"problem", problem}});
    }
  }
  held_.clear();
  // Every recorded path: those released above are gone or held by another agent (a no-op
  // then); those of a crashed run are removed here unless another agent holds them.
  std::ifstream in(root_ + "/created-paths");
  std::vector<std::pair<std::string, bool>> paths;  // path, file
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 2 && (line[0] == 'd' || line[0] == 'f') && line[1] == ' ') {
      paths.emplace_back(line.substr(2), line[0] == 'f');
    }
  }
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    const std::string problem = SharedMountTarget::RemoveIfUnused(it->first, it->second, lock_dir_);
    if (!problem.empty())
      log::Warning("created mount target left in place", {{"problem", problem}});
  }
  std::error_code ec;
  fs::remove(root_ + "/created-paths", ec);
}

Status StateDir::EnsurePath(const std::string& path, bool file) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_.count(path) != 0) return Status::Ok();
  {
    std::ofstream record(root_ + "/created-paths", std::ios::app);
    record << (file ? "f " : "d ") << path << "\n";
    record.flush();
    if (!record) return InternalError("cannot record the mount target " + path);
  }
  LS_ASSIGN_OR_RETURN(SharedMountTarget target, SharedMountTarget::Acquire(path, file, lock_dir_));
  held_.emplace(path, std::move(target));
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
