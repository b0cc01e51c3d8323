#include "launcher/attempt.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>

#include "common/log.h"
#include "common/net.h"
#include "launcher/supervisor/stop_grace.h"
#include "protocol/contract.h"

namespace lockstep::launcher {
namespace {

using protocol::FailureReason;
using supervisor::StopCause;

// The loop wakes at least this often to reap children and check for hangs.
constexpr int kMaxWaitMs = 100;

std::string DescribeFailure(const supervisor::ChildFailure& f) {
  if (f.signal != 0) {
    return "rank " + std::to_string(f.rank) + " killed by signal " + std::to_string(f.signal);
  }
  return "rank " + std::to_string(f.rank) + " exited with code " + std::to_string(f.exit_code);
}

}  // namespace

Attempt::Attempt(const LauncherConfig& config, const World& world, rendezvous::Session& session,
                 supervisor::Supervisor& children, sys::SignalFd& signals, bool can_restart,
                 progress::ProgressFileReader* progress, const Clock& clock)
    : config_(config),
      world_(world),
      session_(session),
      children_(children),
      signals_(signals),
      can_restart_(can_restart),
      clock_(clock),
      next_beat_(clock.Now() + config.heartbeat_interval),
      progress_(progress),
      next_progress_read_(clock.Now()) {
  if (progress_ != nullptr && config_.hang_timeout.count() > 0) stall_.emplace(progress_->reports());
}

AttemptEnd Attempt::Run() {
  while (state_ != State::kEnded) Step();
  return end_;
}

void Attempt::Step() {
  std::vector<pollfd> fds;
  fds.push_back({signals_.fd(), POLLIN, 0});
  if (session_alive_) fds.push_back({session_.fd(), POLLIN, 0});
  for (int fd : children_.OutputFds()) fds.push_back({fd, POLLIN, 0});
  ::poll(fds.data(), fds.size(), std::min(net::MillisUntil(next_beat_), kMaxWaitMs));
  const Steady::time_point now = clock_.Now();

  OnSignals();
  for (const pollfd& p : fds) {
    if (p.fd != signals_.fd() && (!session_alive_ || p.fd != session_.fd()) && p.revents != 0) {
      children_.OnOutput(p.fd, now);
    }
  }
  if (session_alive_ && fds.size() > 1 && fds[1].fd == session_.fd() && fds[1].revents != 0) {
    OnServer();
  }
  Heartbeat(now);
  children_.Poll(now);
  CheckChildren(now);
  Advance(now);
}

void Attempt::OnSignals() {
  for (int sig : signals_.Drain()) {
    if (sig == SIGCHLD) continue;  // the children are reaped by Poll
    end_.stop_signaled = true;
    const std::chrono::milliseconds grace =
        supervisor::StopGrace(StopCause::kSignal, config_.grace_period);
    // A stop already under way (a gang failure) keeps its own grace: Stop() acts once.
    const bool first = children_.state() == supervisor::Supervisor::State::kRunning;
    log::Info("signal received; stopping children",
              {{"signal", std::to_string(sig)},
               {"grace_ms", first ? std::to_string(grace.count()) : "already stopping"}});
    if (Decide(AttemptEnd::Kind::kSignal,
               "launcher received signal " + std::to_string(sig))) {
      end_.signal = sig;
    }
    children_.Stop(grace, sig);
  }
}

void Attempt::StopGang() {
  children_.Stop(supervisor::StopGrace(StopCause::kGang, config_.grace_period), SIGTERM);
}

void Attempt::FenceGang() {
  // Fencing: node 0 may already have reported this launcher lost, and the operator may start the
  // next attempt without it. Its ranks must not keep running (and writing checkpoints) beside
  // that world, so they get SIGKILL now, not a grace to checkpoint in (docs/failures.md
  // "Fencing"). After the server's Abort the round is over anyway and the server closes the
  // session: that stop keeps its grace. A stop already under way for a local failure keeps its
  // (capped) grace too: the supervisor acts on the first Stop only.
  if (end_.abort) {
    StopGang();
    return;
  }
  log::Warning("lost the rendezvous server; killing the children at once (fencing)");
  children_.Stop(std::chrono::milliseconds(0), SIGKILL);
}

void Attempt::OnServer() {
  for (const rendezvous::ServerEvent& ev : session_.OnReadable()) {
    if (ev.kind == rendezvous::ServerEvent::Kind::kAbort &&
        ev.abort.attempt == static_cast<uint32_t>(world_.attempt) && !end_.abort) {
      end_.abort = ev.abort;
      Decide(AttemptEnd::Kind::kAborted, ev.abort.message);
      if (ev.abort.spare_promoted) {
        children_.Stop(std::min(supervisor::StopGrace(StopCause::kGang, config_.grace_period),
                                kPromotionStopGraceCap),
                       SIGTERM);
      } else {
        StopGang();
      }
    } else if (ev.kind == rendezvous::ServerEvent::Kind::kClosed) {
      session_alive_ = false;
      Decide(AttemptEnd::Kind::kServerLost, "lost the rendezvous server (node 0): " + ev.detail);
      FenceGang();
    }
  }
}

void Attempt::Heartbeat(Steady::time_point now) {
  if (!session_alive_ || now < next_beat_) return;
  next_beat_ = now + config_.heartbeat_interval;
  if (session_.SendHeartbeat().ok() && now - session_.last_heard() <= config_.peer_timeout) {
    return;
  }
  session_alive_ = false;
  Decide(AttemptEnd::Kind::kServerLost,
         "rendezvous server (node 0) silent for longer than the peer timeout");
  FenceGang();
}

void Attempt::CheckChildren(Steady::time_point now) {
  if (state_ != State::kRunning) return;
  if (const std::optional<supervisor::ChildFailure>& failure = children_.first_failure()) {
    Decide(AttemptEnd::Kind::kChildFailed, DescribeFailure(*failure));
    end_.failure = failure;
    end_.exit_code = failure->exit_code;
    end_.tail = failure->stderr_tail;
    log::Warning("local process failed; stopping the gang", {{"cause", end_.message}});
    StopGang();
    // An exit code the job's FailJob rules name ends the job: no round restarts for it.
    const bool permanent =
        failure->signal == 0 && config_.fail_exit_codes.count(failure->exit_code) > 0;
    if (permanent) end_.message += " (a FailJob exit code: no in-place restart)";
    ReportFailure(permanent              ? FailureReason::kPermanent
                  : failure->signal != 0 ? FailureReason::kSignal
                                         : FailureReason::kExit,
                  failure->rank, failure->exit_code, failure->signal);
    return;
  }
  std::optional<std::string> hang = children_.CheckHang(now, config_.hang_timeout);
  if (!hang) hang = CheckProgress(now);
  if (hang) {
    EndWithHang(*hang);
    return;
  }
  if (children_.state() == supervisor::Supervisor::State::kExited) {
    Decide(AttemptEnd::Kind::kSuccess, "");
  }
}

std::optional<std::string> Attempt::CheckProgress(Steady::time_point now) {
  if (!stall_ || now < next_progress_read_) return std::nullopt;
  next_progress_read_ = now + std::chrono::seconds(1);
  uint64_t reports = 0;
  const std::optional<protocol::TrainingProgress> latest = progress_->Read(&reports);
  if (!latest) return std::nullopt;
  return stall_->Observe(now, reports, latest->step, latest->total_steps,
                         config_.hang_timeout);
}

void Attempt::EndWithHang(const std::string& cause) {
  Decide(AttemptEnd::Kind::kHang, cause);
  end_.tail = children_.TailOf(0);
  log::Warning("hang detected; stopping the gang", {{"cause", cause}});
  StopGang();
  ReportFailure(FailureReason::kHang, -1, protocol::contract::kExitHang, 0);
}

bool Attempt::Decide(AttemptEnd::Kind kind, std::string message) {
  if (state_ != State::kRunning) return false;
  state_ = State::kStopping;
  end_.kind = kind;
  end_.message = std::move(message);
  return true;
}

void Attempt::ReportFailure(FailureReason reason, int rank, int code, int sig) {
  if (!session_alive_) return;
  Status s = session_.SendFailure({static_cast<uint32_t>(world_.attempt), rank, code, sig,
                                   reason, end_.message, end_.tail});
  if (!s.ok()) session_alive_ = false;
  abort_wait_until_ = clock_.Now() + config_.peer_timeout;
}

void Attempt::Advance(Steady::time_point now) {
  if (state_ == State::kRunning || state_ == State::kEnded || !children_.AllExited()) return;
  if (state_ == State::kStopping && end_.kind == AttemptEnd::Kind::kSignal) {
    end_.exit_code = supervisor::SignalExitCode(end_.signal);
  }
  state_ = WaitsForAbort(now) ? State::kAwaitingAbort : State::kEnded;
}

bool Attempt::WaitsForAbort(Steady::time_point now) const {
  const bool local_failure =
      end_.kind == AttemptEnd::Kind::kChildFailed || end_.kind == AttemptEnd::Kind::kHang;
  return local_failure && can_restart_ && !end_.abort && session_alive_ && abort_wait_until_ &&
         now < *abort_wait_until_;
}

}  // namespace lockstep::launcher
