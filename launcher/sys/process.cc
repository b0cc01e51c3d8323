#include "launcher/sys/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep::launcher::sys {
namespace {

Status Errno(const std::string& what) {
  return InternalError(what + ": " + std::strerror(errno));
}

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, int out_w, int err_w,
                            pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) ::signal(sig, SIG_DFL);
  ::dup2(out_w, STDOUT_FILENO);
  ::dup2(err_w, STDERR_FILENO);
  ::execvpe(argv[0], argv, envp);
  const char msg[] = "lockstep-launcher: exec failed: ";
  (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
  const char* err = ::strerror(errno);
  (void)!::write(STDERR_FILENO, err, ::strlen(err));
  (void)!::write(STDERR_FILENO, "\n", 1);
  ::_exit(127);
}

}  // namespace

StatusOr<SpawnedChild> Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("empty command");
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return Errno("pipe");
  UniqueFd err_r(err[0]), err_w(err[1]);
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) ExecChild(argv.data(), envp.data(), out_w.get(), err_w.get(), parent);
  // Also from the parent, so the group exists before anyone signals it (no race with exec).
  ::setpgid(pid, pid);
  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
  SpawnedChild child;
  child.pid = pid;
  child.stdout_fd = std::move(out_r);
  child.stderr_fd = std::move(err_r);
  return child;
}

void SignalGroup(pid_t pgid, int sig) {
  if (pgid > 0) ::kill(-pgid, sig);
}

ExitInfo DecodeWaitStatus(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
    info.exit_code = 128 + info.signal;
  }
  return info;
}

}  // namespace lockstep::launcher::sys
