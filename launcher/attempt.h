#pragma once
// One attempt on this node — the children of one rendezvous round, from their start to the end
// of the round — as an explicit state machine (the shape of supervisor::Supervisor):
//
//   kRunning --first of: a signal, the server's Abort, the server lost, a child failed, a hang,
//              every child succeeded--> kStopping
//   kStopping --every child reaped--> kAwaitingAbort when this node's own failure could be
//              restarted in place but the server's Abort (which names the round to rejoin) has
//              not come yet; else kEnded
//   kAwaitingAbort --the Abort, the session's end, or the peer timeout--> kEnded
//
// The end's cause is decided once, on leaving kRunning. Later events still act (the Abort is
// kept, since a restart rejoins the round after it) but never replace the cause, and a stop
// under way keeps its grace. How long the children get (supervisor/stop_grace.h): the whole
// --grace-period when a signal stops the launcher (the pod is being deleted; the trainers
// checkpoint), at most 10 s when the launcher decides the stop itself. A signal's end exits
// 128+n whatever the children exited with. A local failure is reported to the server (Failure) when
// it is decided. Single-threaded: Run() owns the loop until kEnded.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/config/config.h"
#include "launcher/progress/progress_file.h"
#include "launcher/progress/progress_stall.h"
#include "launcher/rendezvous/client.h"
#include "launcher/supervisor/supervisor.h"
#include "launcher/sys/signals.h"
#include "launcher/world.h"
#include "protocol/messages.h"

namespace lockstep::launcher {

// The most the children get between SIGTERM and SIGKILL when a spare replaced a lost member
// (Abort::spare_promoted): their collectives are broken by the loss, so a trainer's graceful stop
// (finish the step, checkpoint) rarely completes, and every second here is a second of the
// hot-spare recovery (docs/failures.md "Hot spares"). Two seconds still let a trainer between
// steps finish a small write; checkpoints must be written atomically (write, then rename).
inline constexpr std::chrono::milliseconds kPromotionStopGraceCap{2000};

// How an attempt ended.
struct AttemptEnd {
  enum class Kind { kSuccess, kChildFailed, kHang, kAborted, kServerLost, kSignal, kInternal };
  Kind kind = Kind::kSuccess;
  int exit_code = 0;
  int signal = 0;
  std::string message;
  std::optional<supervisor::ChildFailure> failure;
  std::optional<protocol::Abort> abort;  // the server's abort of this round, if it came
  std::vector<std::string> tail;         // the failing child's last stderr lines
  // A stop signal (SIGTERM, ...) arrived during the attempt, whatever ended it first: the pod is
  // being deleted, so node 0 does not linger for the operator (launcher.cc).
  bool stop_signaled = false;
};

class Attempt {
 public:
  enum class State { kRunning, kStopping, kAwaitingAbort, kEnded };

  // `children` runs the attempt's children already; `can_restart`: a local failure may be
  // restarted in place (budget left), so the end waits for the server's Abort. `progress`: the
  // children's progress file, a hang signal with --hang-timeout (progress/progress_stall.h);
  // null: none. Not owned; must outlive this.
  Attempt(const LauncherConfig& config, const World& world, rendezvous::Session& session,
          supervisor::Supervisor& children, sys::SignalFd& signals, bool can_restart,
          progress::ProgressFileReader* progress = nullptr, const Clock& clock = RealClock::Get());

  AttemptEnd Run();
  State state() const { return state_; }

 private:
  using Steady = std::chrono::steady_clock;

  // One wait on the signals, the session and the children's output, and what it brought.
  void Step();
  void OnSignals();
  void OnServer();
  void Heartbeat(Steady::time_point now);
  void CheckChildren(Steady::time_point now);
  // The progress file's step stalled (read about once a second, only with --hang-timeout).
  std::optional<std::string> CheckProgress(Steady::time_point now);
  void EndWithHang(const std::string& cause);
  // Stops the children for a cause the launcher decided (a failure, the server): the short
  // grace (supervisor/stop_grace.h), where a signal's stop gets the whole --grace-period.
  void StopGang();
  // The server is lost: SIGKILL the children at once (docs/failures.md "Fencing").
  void FenceGang();
  // kRunning -> kStopping with this cause; later calls change nothing.
  bool Decide(AttemptEnd::Kind kind, std::string message);
  // Tells the server this node failed; its Abort is then awaited up to the peer timeout.
  void ReportFailure(protocol::FailureReason reason, int rank, int code, int sig);
  void SessionLost();
  // kStopping -> kAwaitingAbort or kEnded once every child is reaped; kAwaitingAbort -> kEnded.
  void Advance(Steady::time_point now);
  bool WaitsForAbort(Steady::time_point now) const;

  const LauncherConfig& config_;
  const World& world_;
  rendezvous::Session& session_;
  supervisor::Supervisor& children_;
  sys::SignalFd& signals_;
  const bool can_restart_;
  const Clock& clock_;

  State state_ = State::kRunning;
  AttemptEnd end_;
  bool session_alive_ = true;
  Steady::time_point next_beat_;
  std::optional<Steady::time_point> abort_wait_until_;
  progress::ProgressFileReader* const progress_;
  std::optional<progress::ProgressStallWatch> stall_;  // set with progress_ and a hang timeout
  Steady::time_point next_progress_read_;
};

}  // namespace lockstep::launcher
