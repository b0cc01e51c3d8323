#include "tests/e2e/agent/host_command.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace lockstep::e2e {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

StatusOr<std::string> RunHostCommand(const std::vector<std::string>& argv) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0)
    return InternalError("pipe: " + std::string(strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return InternalError("pipe: " + std::string(strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return InternalError("cannot run " + argv[0] + ": " + strerror(rc));
  }
  // Both pipes are small (ip's output); stderr is read after stdout closes.
  std::string out = ReadAll(out_pipe[0]);
  std::string err = ReadAll(err_pipe[0]);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return InternalError("`" + Join(argv) + "` failed: " + err);
  }
  return out;
}

std::vector<pid_t> PidsInNetns(const std::string& netns_path) {
  std::vector<pid_t> pids;
  struct stat target {};
  if (stat(netns_path.c_str(), &target) != 0) return pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat ns {};
    if (stat(("/proc/" + name + "/ns/net").c_str(), &ns) != 0) continue;
    if (ns.st_ino == target.st_ino && ns.st_dev == target.st_dev) {
      pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return pids;
}

int SignalNetns(const std::string& netns_path, int sig) {
  int n = 0;
  for (pid_t pid : PidsInNetns(netns_path)) {
    if (kill(pid, sig) == 0) ++n;
  }
  return n;
}

int64_t ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  // The command name (field 2) may contain spaces and parentheses: skip to the last ')'.
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream fields(line.substr(close_paren + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return -1;
  }
  return std::stoll(field);
}

}  // namespace lockstep::e2e
