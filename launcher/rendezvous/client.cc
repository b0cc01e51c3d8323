#include "launcher/rendezvous/client.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>

#include "common/log.h"
#include "launcher/rendezvous/auth.h"

namespace lockstep::launcher::rendezvous {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// True when a termination signal (SIGTERM, SIGINT, ...) is pending on the launcher's signalfd.
// The same signalfd carries SIGCHLD: a child of the previous attempt exiting just before an
// in-place restart rejoins must not read as an interrupt, so SIGCHLD records are drained here
// (children are reaped with waitpid, never through these records).
bool Interrupted(int fd) {
  if (fd < 0) return false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    signalfd_siginfo info{};
    const ssize_t n = ::read(fd, &info, sizeof(info));
    if (n != static_cast<ssize_t>(sizeof(info))) return n > 0;
    if (info.ssi_signo != SIGCHLD) return true;
  }
}

// Why a connected session ended without a world; `retry` says whether to reconnect.
struct Outcome {
  Status status;
  bool retry = false;
};

// Runs one connection: challenge, join, then wait for the world while heartbeating.
StatusOr<JoinResult> RunConnection(const ClientOptions& opt, sys::UniqueFd fd, Outcome* outcome) {
  FrameDecoder decoder;
  JoinResult result;
  bool joined = false;
  Steady::time_point next_beat = Steady::now() + opt.heartbeat_interval;
  Steady::time_point last_heard = Steady::now();
  for (;;) {
    if (Steady::now() >= opt.deadline) {
      *outcome = {DeadlineExceededError("rendezvous did not complete before the join deadline"),
                  false};
      return outcome->status;
    }
    if (Steady::now() - last_heard > opt.peer_timeout) {
      *outcome = {UnavailableError("rendezvous server went silent"), true};
      return outcome->status;
    }
    pollfd fds[2] = {{fd.get(), POLLIN, 0}, {opt.interrupt_fd, POLLIN, 0}};
    const int wait = std::min(sys::MillisUntil(opt.deadline), sys::MillisUntil(next_beat));
    int n = ::poll(fds, opt.interrupt_fd >= 0 ? 2 : 1, wait);
    if (n < 0 && errno != EINTR) {
      *outcome = {UnavailableError("poll failed"), true};
      return outcome->status;
    }
    if (Interrupted(opt.interrupt_fd)) {
      *outcome = {CancelledError("interrupted by a signal during rendezvous"), false};
      return outcome->status;
    }
    if (Steady::now() >= next_beat) {
      next_beat = Steady::now() + opt.heartbeat_interval;
      if (joined) {
        Status s = sys::WriteAll(fd.get(), Encode(Heartbeat{opt.attempt}), opt.deadline);
        if (!s.ok()) {
          *outcome = {s, true};
          return s;
        }
      }
    }
    if (n <= 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    std::string bytes;
    StatusOr<sys::ReadResult> r = sys::ReadAvailable(fd.get(), &bytes);
    if (!r.ok()) {
      *outcome = {r.status(), true};
      return r.status();
    }
    last_heard = Steady::now();
    decoder.Append(bytes);
    for (;;) {
      StatusOr<std::optional<Frame>> frame = decoder.Next();
      if (!frame.ok()) {
        *outcome = {frame.status(), true};
        return frame.status();
      }
      if (!frame->has_value()) break;
      const Frame& f = **frame;
      switch (static_cast<MessageType>(f.type)) {
        case MessageType::kChallenge: {
          LS_ASSIGN_OR_RETURN(Challenge ch, DecodeChallenge(f.body));
          Join join;
          join.run_id = opt.run_id;
          join.attempt = opt.attempt;
          join.node_rank = opt.node_rank;
          join.role = opt.role;
          join.role_index = opt.role_index;
          join.host = opt.host;
          join.port = opt.port;
          join.nproc = opt.nproc;
          join.want_peer_table = opt.want_peer_table;
          join.mac = JoinMac(opt.token, ch.nonce, opt.run_id, opt.attempt, opt.node_rank);
          Status s = sys::WriteAll(fd.get(), Encode(join), opt.deadline);
          if (!s.ok()) {
            *outcome = {s, true};
            return s;
          }
          joined = true;
          break;
        }
        case MessageType::kRefuse: {
          LS_ASSIGN_OR_RETURN(Refuse refuse, DecodeRefuse(f.body));
          *outcome = {PermissionDeniedError(refuse.reason), false};
          return outcome->status;
        }
        case MessageType::kHeartbeat:
          break;
        case MessageType::kAbort: {
          LS_ASSIGN_OR_RETURN(Abort abort, DecodeAbort(f.body));
          *outcome = {AbortedError("round aborted while gathering: " + abort.message), false};
          return outcome->status;
        }
        case MessageType::kPeerTable: {
          LS_ASSIGN_OR_RETURN(PeerTable table, DecodePeerTable(f.body));
          result.peers = std::move(table);
          break;
        }
        case MessageType::kWorld: {
          LS_ASSIGN_OR_RETURN(result.world, DecodeWorld(f.body));
          result.session =
              std::make_unique<Session>(std::move(fd), std::move(decoder), opt.attempt);
          return result;
        }
        default:
          *outcome = {DataLossError("unexpected message type " + std::to_string(f.type)), true};
          return outcome->status;
      }
    }
    if (r->eof) {
      *outcome = {UnavailableError("server closed the connection"), true};
      return outcome->status;
    }
  }
}

}  // namespace

Session::Session(sys::UniqueFd fd, FrameDecoder decoder, uint32_t attempt)
    : fd_(std::move(fd)),
      decoder_(std::move(decoder)),
      attempt_(attempt),
      last_heard_(Steady::now()) {}

std::vector<ServerEvent> Session::OnReadable() {
  std::vector<ServerEvent> events;
  std::string bytes;
  StatusOr<sys::ReadResult> r = sys::ReadAvailable(fd_.get(), &bytes);
  if (!r.ok()) {
    events.push_back({ServerEvent::Kind::kClosed, {}, r.status().ToString()});
    return events;
  }
  if (r->bytes > 0) last_heard_ = Steady::now();
  decoder_.Append(bytes);
  for (;;) {
    StatusOr<std::optional<Frame>> frame = decoder_.Next();
    if (!frame.ok()) {
      events.push_back({ServerEvent::Kind::kClosed, {}, frame.status().ToString()});
      return events;
    }
    if (!frame->has_value()) break;
    const Frame& f = **frame;
    if (f.type == static_cast<uint8_t>(MessageType::kAbort)) {
      StatusOr<Abort> abort = DecodeAbort(f.body);
      if (!abort.ok()) {
        events.push_back({ServerEvent::Kind::kClosed, {}, abort.status().ToString()});
        return events;
      }
      events.push_back({ServerEvent::Kind::kAbort, *abort, ""});
    } else if (f.type == static_cast<uint8_t>(MessageType::kHeartbeat)) {
      events.push_back({ServerEvent::Kind::kHeartbeat, {}, ""});
    }
  }
  if (r->eof) events.push_back({ServerEvent::Kind::kClosed, {}, "server closed the connection"});
  return events;
}

Status Session::Send(const std::string& bytes) {
  return sys::WriteAll(fd_.get(), bytes, Steady::now() + milliseconds(2000));
}

Status Session::SendHeartbeat() { return Send(Encode(Heartbeat{attempt_})); }
Status Session::SendFailure(const Failure& f) { return Send(Encode(f)); }
Status Session::SendDone(bool ends_job) { return Send(Encode(Done{attempt_, ends_job})); }
Status Session::SendStarted() { return Send(Encode(Started{attempt_})); }

StatusOr<JoinResult> JoinRound(const ClientOptions& opt) {
  milliseconds backoff(50);
  Status last = UnavailableError("never connected");
  bool logged = false;
  while (Steady::now() < opt.deadline) {
    if (Interrupted(opt.interrupt_fd)) {
      return CancelledError("interrupted by a signal during rendezvous");
    }
    const Steady::time_point connect_deadline =
        std::min(opt.deadline, Steady::now() + milliseconds(5000));
    StatusOr<sys::UniqueFd> fd = sys::ConnectTcp(opt.endpoint, connect_deadline);
    if (fd.ok()) {
      Outcome outcome;
      StatusOr<JoinResult> result = RunConnection(opt, std::move(*fd), &outcome);
      if (result.ok() || !outcome.retry) return result;
      last = outcome.status;
    } else {
      last = fd.status();
    }
    if (!logged) {
      log::Info("rendezvous: server not reachable yet, retrying",
                {{"endpoint", opt.endpoint.host + ":" + std::to_string(opt.endpoint.port)},
                 {"error", last.message()}});
      logged = true;
    }
    // Sleep, but wake at once for a signal.
    pollfd p{opt.interrupt_fd, POLLIN, 0};
    ::poll(&p, opt.interrupt_fd >= 0 ? 1 : 0,
           static_cast<int>(std::min<int64_t>(backoff.count(), sys::MillisUntil(opt.deadline))));
    backoff = std::min(backoff * 2, milliseconds(1000));
  }
  return DeadlineExceededError("rendezvous did not complete before the join deadline: " +
                               last.message());
}

}  // namespace lockstep::launcher::rendezvous
