#include "tests/unit/helm/command.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace lockstep::helmtest {

namespace {

// Reads both pipes until each reaches EOF; polling both avoids a deadlock when the child fills
// one pipe while the parent blocks on the other.
void DrainPipes(int out_fd, int err_fd, CommandResult* result) {
  std::array<pollfd, 2> fds = {pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0}};
  std::array<std::string*, 2> sinks = {&result->out, &result->err};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(n));
    }
  }
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& args) {
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0) return {-1, "", "pipe failed"};
  if (pipe(err_pipe) != 0) return {-1, "", "pipe failed"};
  const pid_t pid = fork();
  if (pid < 0) return {-1, "", "fork failed"};
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult result;
  DrainPipes(out_pipe[0], err_pipe[0], &result);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string HelmBinary() {
  if (const char* explicit_path = std::getenv("LOCKSTEP_HELM")) return explicit_path;
  std::string cache;
  if (const char* c = std::getenv("LOCKSTEP_CACHE"); c != nullptr && *c != '\0') {
    cache = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    cache = std::string(x) + "/lockstep";
  } else if (const char* home = std::getenv("HOME")) {
    cache = std::string(home) + "/.cache/lockstep";
  }
  const std::string cached = cache + "/tools/bin/helm";
  if (!cache.empty() && access(cached.c_str(), X_OK) == 0) return cached;
  return "helm";
}

std::string SourcePath(const std::string& relative) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace lockstep::helmtest
