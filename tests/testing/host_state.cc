#include "tests/testing/host_state.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

extern char** environ;

namespace lockstep::testing {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string ShellOutput(const std::string& command, int* rc) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    if (rc != nullptr) *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (rc != nullptr) *rc = status;
  return out;
}

std::vector<pid_t> MarkedProcesses(const std::string& marker) {
  namespace fs = std::filesystem;
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // A process may exit between the listing and the read: an empty environment, skipped.
    const std::string env = ReadWholeFile("/proc/" + name + "/environ");
    if (env.find(marker) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

namespace {

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

pid_t SpawnWithLog(std::vector<std::string> argv, std::vector<std::string> env,
                   const std::string& log_path) {
  std::vector<char*> cargv = CStrings(argv);
  std::vector<char*> cenv = CStrings(env);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  if (::posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(),
                    env.empty() ? environ : cenv.data()) != 0) {
    pid = -1;
  }
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

bool SpawnAndAwaitLine(std::vector<std::string> argv, const std::string& stderr_path,
                       const std::string& ready_line, std::chrono::seconds timeout, pid_t* pid) {
  *pid = 0;
  int out[2];
  if (::pipe(out) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> cargv = CStrings(argv);
  const int rc = ::posix_spawn(pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    *pid = 0;
    return false;
  }
  pollfd p{out[0], POLLIN, 0};
  std::string line;
  char c = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (line != ready_line && std::chrono::steady_clock::now() < deadline) {
    if (::poll(&p, 1, 1000) <= 0) continue;
    if (::read(out[0], &c, 1) != 1) break;
    if (c != '\n') line.push_back(c);
  }
  ::close(out[0]);
  return line == ready_line;
}

std::vector<std::string> LinesFrom(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(needle);
    if (at != std::string::npos) out.push_back(line.substr(at));
  }
  return out;
}

}  // namespace lockstep::testing
