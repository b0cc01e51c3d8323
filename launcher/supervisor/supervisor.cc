#include "launcher/supervisor/supervisor.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/log.h"

namespace lockstep::launcher::supervisor {
namespace {

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our own stdout is gone; dropping output beats blocking children
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

Supervisor::~Supervisor() {
  for (Child& c : children_) {
    if (!c.exited && c.pid > 0) {
      sys::SignalGroup(c.pid, SIGKILL);
      int status = 0;
      ::waitpid(c.pid, &status, 0);
    }
  }
}

Status Supervisor::Start(std::vector<ChildSpec> specs) {
  const Steady::time_point now = clock_.Now();
  children_.clear();
  children_.reserve(specs.size());
  for (ChildSpec& spec : specs) {
    StatusOr<sys::SpawnedChild> spawned = sys::Spawn(spec.spawn);
    if (!spawned.ok()) {
      Stop(std::chrono::milliseconds(0), SIGKILL);
      return spawned.status().WithContext("start local rank " + std::to_string(spec.local_rank));
    }
    Child c;
    c.spec = std::move(spec);
    c.pid = spawned->pid;
    c.out = std::move(spawned->stdout_fd);
    c.err = std::move(spawned->stderr_fd);
    c.last_progress = now;
    children_.push_back(std::move(c));
  }
  state_ = State::kRunning;
  return Status::Ok();
}

void Supervisor::Stop(std::chrono::milliseconds grace, int sig) {
  if (state_ == State::kStopping || state_ == State::kExited) return;
  state_ = State::kStopping;
  for (const Child& c : children_) {
    if (!c.exited) sys::SignalGroup(c.pid, sig);
  }
  kill_deadline_ = clock_.Now() + grace;
  if (AllExited()) state_ = State::kExited;
}

void Supervisor::Poll(Steady::time_point now) {
  Reap(now);
  if (state_ == State::kStopping && kill_deadline_ && now >= *kill_deadline_) {
    for (const Child& c : children_) {
      if (!c.exited) {
        log::Warning("child ignored SIGTERM past the grace period; sending SIGKILL",
                     {{"rank", std::to_string(c.spec.rank)}});
        sys::SignalGroup(c.pid, SIGKILL);
      }
    }
    kill_deadline_.reset();
  }
}

void Supervisor::Reap(Steady::time_point now) {
  for (Child& c : children_) {
    if (c.exited) continue;
    int status = 0;
    const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r != c.pid) continue;
    // The leader is gone; whatever it left in its group goes with it.
    sys::SignalGroup(c.pid, SIGKILL);
    Drain(c, now);
    c.exited = true;
    c.exit = sys::DecodeWaitStatus(status);
    if (c.exit.exit_code > worst_code_) worst_code_ = c.exit.exit_code;
    const bool failed = c.exit.exit_code != 0;
    log::Info("child exited", {{"rank", std::to_string(c.spec.rank)},
                               {"exit_code", std::to_string(c.exit.exit_code)},
                               {"signal", std::to_string(c.exit.signal)}});
    if (failed && state_ == State::kRunning && !first_failure_) {
      first_failure_ = ChildFailure{c.spec.rank, c.spec.local_rank, c.exit.exit_code,
                                    c.exit.signal, c.tail.Lines()};
    }
  }
  if (AllExited() && !children_.empty()) state_ = State::kExited;
}

namespace {

// Longest partial line held back before it is written anyway (a child printing without
// newlines must not grow the launcher's memory).
constexpr size_t kMaxPartialLine = 64 * 1024;

// Appends `data` to `partial` and writes out everything up to its last newline.
void ForwardLines(int out_fd, std::string& partial, std::string_view data) {
  partial.append(data);
  const size_t end = partial.rfind('\n');
  const size_t upto = end == std::string::npos
                          ? (partial.size() >= kMaxPartialLine ? partial.size() : 0)
                          : end + 1;
  if (upto == 0) return;
  WriteAll(out_fd, partial.data(), upto);
  partial.erase(0, upto);
}

}  // namespace

void Supervisor::Drain(Child& c, Steady::time_point now) {
  for (UniqueFd* fd : {&c.out, &c.err}) {
    if (!fd->valid()) continue;
    const bool is_err = fd == &c.err;
    const int out_fd = is_err ? STDERR_FILENO : STDOUT_FILENO;
    std::string& partial = is_err ? c.partial_err : c.partial_out;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd->get(), buf, sizeof(buf));
      if (n > 0) {
        const std::string_view data(buf, static_cast<size_t>(n));
        ForwardLines(out_fd, partial, data);
        if (is_err) c.tail.Append(data);
        if (c.spec.heartbeat_file.empty()) c.last_progress = now;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) {  // EOF: every writer (grandchildren too) closed it; flush the last line
        if (!partial.empty()) WriteAll(out_fd, partial.data(), partial.size());
        partial.clear();
        fd->Reset();
      }
      break;
    }
  }
}

bool Supervisor::OnOutput(int fd, Steady::time_point now) {
  for (Child& c : children_) {
    if (c.out.get() == fd || c.err.get() == fd) {
      Drain(c, now);
      return true;
    }
  }
  return false;
}

std::optional<std::string> Supervisor::CheckHang(Steady::time_point now,
                                                 std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0 || state_ != State::kRunning) return std::nullopt;
  for (Child& c : children_) {
    if (c.exited) continue;
    if (!c.spec.heartbeat_file.empty()) {
      struct stat st{};
      if (::stat(c.spec.heartbeat_file.c_str(), &st) == 0) {
        const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                              st.st_mtim.tv_nsec;
        if (mtime != c.last_mtime_ns) {
          c.last_mtime_ns = mtime;
          c.last_progress = now;
        }
      }
    }
    if (now - c.last_progress > timeout) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.1f", static_cast<double>(timeout.count()) / 1000);
      return "rank " + std::to_string(c.spec.rank) + " made no progress for " + secs + " s (" +
             (c.spec.heartbeat_file.empty() ? std::string("no output")
                                            : "heartbeat file " + c.spec.heartbeat_file +
                                                  " not touched") +
             ")";
    }
  }
  return std::nullopt;
}

bool Supervisor::AllExited() const {
  for (const Child& c : children_) {
    if (!c.exited) return false;
  }
  return true;
}

std::vector<int> Supervisor::OutputFds() const {
  std::vector<int> fds;
  for (const Child& c : children_) {
    if (c.out.valid()) fds.push_back(c.out.get());
    if (c.err.valid()) fds.push_back(c.err.get());
  }
  return fds;
}

int Supervisor::ExitCode() const {
  if (first_failure_) return first_failure_->exit_code;
  return worst_code_;
}

std::vector<std::string> Supervisor::TailOf(int local_rank) const {
  for (const Child& c : children_) {
    if (c.spec.local_rank == local_rank) return c.tail.Lines();
  }
  return {};
}

}  // namespace lockstep::launcher::supervisor
