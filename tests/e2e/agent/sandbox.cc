#include "tests/e2e/agent/sandbox.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep::e2e {
namespace {

// Child-side failure report: "<step>: <errno text>" through a CLOEXEC pipe, then _exit. Only
// async-signal-safe calls (write, strerror of a known errno is not, so send the number).
[[noreturn]] void ChildFail(int fd, const char* step) {
  const int err = errno;
  // Layout: 4 bytes errno, then the step name.
  ssize_t ignored = write(fd, &err, sizeof(err));
  ignored = write(fd, step, strlen(step));
  (void)ignored;
  _exit(127);
}

void ResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD, SIGHUP}) {
    signal(sig, SIG_DFL);
  }
}

// Reads the child's report: EOF with nothing = success (exec closed the CLOEXEC end).
Status ReadChildReport(int fd, pid_t pid, const char* what) {
  char buf[256];
  ssize_t total = 0;
  while (true) {
    const ssize_t n = read(fd, buf + total, sizeof(buf) - 1 - static_cast<size_t>(total));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += n;
    if (static_cast<size_t>(total) >= sizeof(buf) - 1) break;
  }
  close(fd);
  if (total == 0) return Status::Ok();
  if (total == 1 && buf[0] == '+') return Status::Ok();  // the pause process is ready
  int err = 0;
  std::string step = "unknown step";
  if (total >= static_cast<ssize_t>(sizeof(int))) {
    std::memcpy(&err, buf, sizeof(int));
    step.assign(buf + sizeof(int), static_cast<size_t>(total) - sizeof(int));
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (err == ENOENT && step == "exec") {
    return NotFoundError(std::string(what) + ": executable not found");
  }
  return InternalError(std::string(what) + ": " + step + ": " + strerror(err));
}

// Clones every mount's source as a detached mount tree (open_tree) into `fds` (sized by the
// parent, before the fork). Done before the child leaves the host's mount namespace: the pod has
// its own /tmp, so a source under the host's /tmp (the agent's state dir: termination-message
// files, /etc/hosts, volumes; hostPaths) is no longer reachable by path inside the pod, and a
// plain bind mount cannot take its source from another namespace; a detached tree can be
// attached in any namespace (move_mount).
void OpenSources(int report, const std::vector<BindMount>& mounts, int* fds) {
  for (size_t i = 0; i < mounts.size(); ++i) {
    fds[i] = open_tree(AT_FDCWD, mounts[i].source.c_str(),
                       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fds[i] < 0) ChildFail(report, "clone mount source");
  }
}

// Attaches each cloned source at its target, in order (a parent directory before what lies
// under it), then closes the descriptors.
void BindAll(int report, const std::vector<BindMount>& mounts, const int* fds) {
  for (size_t i = 0; i < mounts.size(); ++i) {
    const BindMount& m = mounts[i];
    if (move_mount(fds[i], "", AT_FDCWD, m.target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
      ChildFail(report, "bind mount");
    }
    if (m.read_only &&
        mount(nullptr, m.target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      ChildFail(report, "read-only remount");
    }
    close(fds[i]);
  }
}

}  // namespace

StatusOr<pid_t> StartPause(const PauseSpec& spec) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return InternalError("pipe: " + std::string(strerror(errno)));
  const int netns = open(spec.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (netns < 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    return InternalError("open " + spec.netns_path + ": " + strerror(errno));
  }
  std::vector<int> source_fds(spec.mounts.size(), -1);  // filled by the child
  const pid_t pid = fork();
  if (pid < 0) {
    close(netns);
    close(pipefd[0]);
    close(pipefd[1]);
    return InternalError("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    close(pipefd[0]);
    int report = pipefd[1];
    ResetSignals();
    setpgid(0, 0);
    if (setns(netns, CLONE_NEWNET) != 0) ChildFail(report, "setns net");
    // The pause process never execs, so CLOEXEC does not help: drop every descriptor it
    // inherited (other pods' report pipes among them, which would block their readers).
    if (report != 3) {
      if (dup2(report, 3) < 0) ChildFail(report, "dup2");
      report = 3;
    }
    close_range(4, ~0U, 0);
    OpenSources(report, spec.mounts, source_fds.data());
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) ChildFail(report, "unshare");
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      ChildFail(report, "make / private");
    }
    BindAll(report, spec.mounts, source_fds.data());
    if (sethostname(spec.hostname.c_str(), spec.hostname.size()) != 0) {
      ChildFail(report, "sethostname");
    }
    const char ready = '+';
    ssize_t ignored = write(report, &ready, 1);
    (void)ignored;
    close(report);
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    prctl(PR_SET_NAME, "ls-pod-pause", 0, 0, 0);
    while (true) pause();
  }
  setpgid(pid, pid);
  close(netns);
  close(pipefd[1]);
  Status s = ReadChildReport(pipefd[0], pid, "pod sandbox");
  if (!s.ok()) return s;
  return pid;
}

StatusOr<pid_t> StartContainer(const ContainerSpec& spec) {
  // Everything the child needs is prepared here: after fork only syscalls run.
  const std::string ns_dir = "/proc/" + std::to_string(spec.pause_pid) + "/ns/";
  int fds[3] = {-1, -1, -1};
  const char* kinds[3] = {"net", "uts", "mnt"};
  const int types[3] = {CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWNS};
  for (int i = 0; i < 3; ++i) {
    fds[i] = open((ns_dir + kinds[i]).c_str(), O_RDONLY | O_CLOEXEC);
    if (fds[i] < 0) {
      const int err = errno;
      for (int j = 0; j < i; ++j) close(fds[j]);
      return UnavailableError("the pod sandbox is gone: " + std::string(strerror(err)));
    }
  }
  std::vector<std::string> candidates;
  const std::string& prog = spec.argv.at(0);
  if (prog.find('/') != std::string::npos) {
    candidates.push_back(prog);
  } else {
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    for (const auto& kv : spec.env) {
      if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
    }
    size_t start = 0;
    while (start <= path.size()) {
      const size_t end = std::min(path.find(':', start), path.size());
      const std::string dir = path.substr(start, end - start);
      candidates.push_back((dir.empty() ? "." : dir) + "/" + prog);
      start = end + 1;
    }
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string workdir = spec.working_dir.empty() ? "/" : spec.working_dir;
  const int log_fd = open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const std::vector<BindMount> own_mounts = {spec.termination_log};
  std::vector<int> own_fds(own_mounts.size(), -1);
  int pipefd[2];
  if (log_fd < 0 || pipe2(pipefd, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : fds) close(fd);
    if (log_fd >= 0) close(log_fd);
    return InternalError("container log/pipe: " + std::string(strerror(err)));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    const int report = pipefd[1];
    ResetSignals();
    setpgid(0, 0);
    if (spec.join_pod_mounts) OpenSources(report, own_mounts, own_fds.data());
    for (int i = 0; i < (spec.join_pod_mounts ? 3 : 1); ++i) {
      if (setns(fds[i], types[i]) != 0) ChildFail(report, "setns");
    }
    if (spec.join_pod_mounts) {
      // A child mount namespace of the pod's, for this container's termination-message file.
      if (unshare(CLONE_NEWNS) != 0) ChildFail(report, "unshare mnt");
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        ChildFail(report, "make / private");
      }
      BindAll(report, own_mounts, own_fds.data());
    }
    if (chdir(workdir.c_str()) != 0) ChildFail(report, "chdir workingDir");
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
      ChildFail(report, "stdio");
    }
    // Nothing of the agent's (API sockets, other pods' pipes) leaks into the container.
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    int exec_errno = ENOENT;
    for (const auto& candidate : candidates) {
      execve(candidate.c_str(), argv.data(), envp.data());
      if (errno != ENOENT && errno != ENOTDIR) exec_errno = errno;
    }
    errno = exec_errno;
    ChildFail(report, "exec");
  }
  const int fork_errno = errno;
  if (pid > 0) setpgid(pid, pid);  // also here, so a kill right after start reaches the group
  for (int fd : fds) close(fd);
  close(log_fd);
  close(pipefd[1]);
  if (pid < 0) {
    close(pipefd[0]);
    return InternalError("fork: " + std::string(strerror(fork_errno)));
  }
  Status s = ReadChildReport(pipefd[0], pid, "container");
  if (!s.ok()) return s;
  return pid;
}

}  // namespace lockstep::e2e
