#pragma once
// The local children of one attempt as an explicit state machine:
//   kIdle -> Start() -> kRunning -> Stop() -> kStopping -> (all reaped) -> kExited
// A child exiting non-zero (or by a signal) while kRunning is a failure; the first one is kept as
// the attempt's root cause. Exits during kStopping are consequences and never replace it.
// Progress (for hang detection) is the heartbeat file's mtime changing, or, without a file, any
// output. Single-threaded: the launcher's event loop calls every method.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/supervisor/output_tail.h"
#include "launcher/sys/process.h"

namespace lockstep::launcher::supervisor {

using Steady = std::chrono::steady_clock;

struct ChildSpec {
  sys::SpawnSpec spawn;
  int rank = 0;
  int local_rank = 0;
  std::string heartbeat_file;  // empty: output counts as progress
};

struct ChildFailure {
  int rank = 0;
  int local_rank = 0;
  int exit_code = 0;
  int signal = 0;
  std::vector<std::string> stderr_tail;
};

class Supervisor {
 public:
  enum class State { kIdle, kRunning, kStopping, kExited };

  // `clock` (which outlives the supervisor) times the kill deadline and the children's start.
  explicit Supervisor(const Clock& clock = RealClock::Get()) : clock_(clock) {}
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  // Kills (SIGKILL) and reaps anything still alive.
  ~Supervisor();

  // Spawns every child; if one cannot start, the ones started are stopped and the error returned.
  Status Start(std::vector<ChildSpec> specs);
  // SIGTERM (or `sig`) to every live child's process group; SIGKILL after `grace`.
  void Stop(std::chrono::milliseconds grace, int sig);
  // Reaps exited children (call on SIGCHLD) and escalates to SIGKILL past the grace deadline.
  void Poll(Steady::time_point now);
  // Pass a child's output through to ours and record it. Returns false if `fd` is not a child's.
  bool OnOutput(int fd, Steady::time_point now);
  // The first hung child's description, when --hang-timeout is on.
  std::optional<std::string> CheckHang(Steady::time_point now, std::chrono::milliseconds timeout);

  State state() const { return state_; }
  bool AllExited() const;
  std::vector<int> OutputFds() const;
  const std::optional<ChildFailure>& first_failure() const { return first_failure_; }
  // The first failure's exit code (128+n for a signal), else the worst code seen, else 0.
  int ExitCode() const;
  // stderr tail of the child with `local_rank` (for reports not caused by an exit).
  std::vector<std::string> TailOf(int local_rank) const;

 private:
  struct Child {
    ChildSpec spec;
    pid_t pid = -1;
    UniqueFd out;
    UniqueFd err;
    // The unfinished last line of each stream: output is passed on in whole lines so the
    // lines of two ranks never interleave mid-line in the container's log.
    std::string partial_out;
    std::string partial_err;
    bool exited = false;
    sys::ExitInfo exit;
    OutputTail tail;
    Steady::time_point last_progress;
    int64_t last_mtime_ns = -1;
  };
  void Reap(Steady::time_point now);
  void Drain(Child& c, Steady::time_point now);

  const Clock& clock_;
  State state_ = State::kIdle;
  std::vector<Child> children_;
  std::optional<ChildFailure> first_failure_;
  std::optional<Steady::time_point> kill_deadline_;
  int worst_code_ = 0;
};

}  // namespace lockstep::launcher::supervisor
