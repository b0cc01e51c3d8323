#include "launcher/rendezvous/client.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <variant>

#include "common/log.h"
#include "protocol/auth.h"

namespace lockstep::launcher::rendezvous {

using protocol::Abort;
using protocol::Challenge;
using protocol::Decode;
using protocol::Encode;
using protocol::Frame;
using protocol::FrameDecoder;
using protocol::Heartbeat;
using protocol::Join;
using protocol::MessageType;
using protocol::PeerTable;
using protocol::Promote;
using protocol::Refuse;
using protocol::WorldMsg;
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

// Why a connection ended without a world, and whether JoinRound may connect again.
struct Ending {
  Status status;
  bool retry = false;
};

// One connection to the server as an explicit state machine:
//   kAwaitingChallenge --Challenge, Join sent--> kJoined --PeerTable--> kJoined --World--> kFormed
// and from either waiting state to kEnded, with an Ending:
//   final (JoinRound returns it): Refuse, Abort (the caller rejoins attempt + 1), the join
//     deadline, a signal, a message this version cannot decode (the next connection would bring
//     the same);
//   retried (JoinRound connects again): a broken or closed connection, a silent server, a
//     stream that is not frames, a message out of place.
// While kJoined it heartbeats the server, which drops silent joiners.
class Connection {
 public:
  enum class State { kAwaitingChallenge, kJoined, kFormed, kEnded };

  Connection(const ClientOptions& opt, UniqueFd fd)
      : opt_(opt),
        fd_(std::move(fd)),
        attempt_(opt.attempt),
        next_beat_(opt_.clock->Now() + opt.heartbeat_interval),
        last_heard_(opt_.clock->Now()) {}

  // The world (kFormed) or why the connection ended (kEnded).
  std::variant<JoinResult, Ending> Run() {
    while (Waiting()) Step();
    if (state_ == State::kFormed) return std::move(result_);
    if (result_.promoted && ending_.status.code() != StatusCode::kPermissionDenied) {
      // Promoted, then the connection ended: the promotion stands (the server keeps the
      // node-rank for this spare), so the launcher rejoins as that node-rank.
      result_.rejoin_round =
          result_.promoted->attempt + (IsAborted(ending_.status) ? 1u : 0u);
      return std::move(result_);
    }
    return std::move(ending_);
  }

 private:
  bool Waiting() const {
    return state_ == State::kAwaitingChallenge || state_ == State::kJoined;
  }

  void End(Status status, bool retry) {
    state_ = State::kEnded;
    ending_ = Ending{std::move(status), retry};
  }

  // One wait for the server (or the next heartbeat), and what arrived.
  void Step() {
    if (opt_.clock->Now() >= opt_.deadline) {
      return End(DeadlineExceededError("rendezvous did not complete before the join deadline"),
                 false);
    }
    if (opt_.clock->Now() - last_heard_ > opt_.peer_timeout) {
      return End(UnavailableError("rendezvous server went silent"), true);
    }
    pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {opt_.interrupt_fd, POLLIN, 0}};
    const int wait = std::min(net::MillisUntil(opt_.deadline), net::MillisUntil(next_beat_));
    const int n = ::poll(fds, opt_.interrupt_fd >= 0 ? 2 : 1, wait);
    if (n < 0 && errno != EINTR) return End(UnavailableError("poll failed"), true);
    if (Interrupted(opt_.interrupt_fd)) {
      return End(CancelledError("interrupted by a signal during rendezvous"), false);
    }
    if (opt_.clock->Now() >= next_beat_) {
      next_beat_ = opt_.clock->Now() + opt_.heartbeat_interval;
      if (state_ == State::kJoined) {
        Status s = net::WriteAll(fd_.get(), Encode(Heartbeat{attempt_}), opt_.deadline);
        if (!s.ok()) return End(std::move(s), true);
      }
    }
    if (n <= 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
    std::string bytes;
    StatusOr<net::ReadResult> r = net::ReadAvailable(fd_.get(), &bytes);
    if (!r.ok()) return End(r.status(), true);
    last_heard_ = opt_.clock->Now();
    decoder_.Append(bytes);
    while (Waiting()) {
      StatusOr<std::optional<Frame>> frame = decoder_.Next();
      if (!frame.ok()) return End(frame.status(), true);
      if (!frame->has_value()) break;
      OnFrame(**frame);
    }
    if (Waiting() && r->eof) End(UnavailableError("server closed the connection"), true);
  }

  void OnFrame(const Frame& f) {
    switch (static_cast<MessageType>(f.type)) {
      case MessageType::kChallenge:
        if (state_ != State::kAwaitingChallenge) return Unexpected(f);
        return OnChallenge(f);
      case MessageType::kRefuse:
        if (StatusOr<Refuse> refuse = Decoded<Refuse>(f); refuse.ok()) {
          End(PermissionDeniedError(refuse->reason), false);
        }
        return;
      case MessageType::kHeartbeat:
        return;
      case MessageType::kAbort:
        if (StatusOr<Abort> abort = Decoded<Abort>(f); abort.ok()) {
          if (Standing() && abort->reason == protocol::FailureReason::kFinished) {
            result_.released = true;
            state_ = State::kFormed;
            return;
          }
          End(AbortedError("round aborted while gathering: " + abort->message), false);
        }
        return;
      case MessageType::kPromote:
        if (!Standing()) return Unexpected(f);
        if (StatusOr<Promote> promote = Decoded<Promote>(f); promote.ok()) {
          // From now on a member of the promoted round: its World comes on this connection.
          attempt_ = promote->attempt;
          result_.promoted = std::move(*promote);
        }
        return;
      case MessageType::kPeerTable:
        if (state_ != State::kJoined) return Unexpected(f);
        if (StatusOr<PeerTable> table = Decoded<PeerTable>(f); table.ok()) {
          result_.peers = std::move(*table);
        }
        return;
      case MessageType::kWorld:
        if (state_ != State::kJoined) return Unexpected(f);
        return OnWorld(f);
      default:
        return Unexpected(f);
    }
  }

  void OnChallenge(const Frame& f) {
    StatusOr<Challenge> ch = Decoded<Challenge>(f);
    if (!ch.ok()) return;
    Join join;
    join.run_id = opt_.run_id;
    join.key_attempt = opt_.key_attempt;
    join.attempt = opt_.attempt;
    join.node_rank = opt_.node_rank;
    join.role = opt_.role;
    join.role_index = opt_.role_index;
    join.host = opt_.host;
    join.port = opt_.port;
    join.nproc = opt_.nproc;
    join.want_peer_table = opt_.want_peer_table;
    join.standby = opt_.standby;
    join.spare_index = opt_.spare_index;
    join.pod_name = opt_.pod_name;
    join.node_name = opt_.node_name;
    join.pod_uid = opt_.pod_uid;
    join.mac = protocol::JoinMac(protocol::AttemptKey(opt_.token, opt_.key_attempt), ch->nonce,
                                 opt_.run_id, opt_.attempt, opt_.node_rank);
    Status s = net::WriteAll(fd_.get(), Encode(join), opt_.deadline);
    if (!s.ok()) return End(std::move(s), true);
    state_ = State::kJoined;
  }

  // A standby spare not promoted yet: it gets no world, and no Abort but kFinished.
  bool Standing() const { return opt_.standby && state_ == State::kJoined && !result_.promoted; }

  void OnWorld(const Frame& f) {
    if (opt_.standby && !result_.promoted) return Unexpected(f);
    StatusOr<WorldMsg> world = Decoded<WorldMsg>(f);
    if (!world.ok()) return;
    result_.world = std::move(*world);
    result_.session = std::make_unique<Session>(std::move(fd_), std::move(decoder_), attempt_,
                                                *opt_.clock);
    state_ = State::kFormed;
  }

  // `M` from the frame; a body this version cannot decode ends the connection for good.
  template <typename M>
  StatusOr<M> Decoded(const Frame& f) {
    StatusOr<M> m = Decode<M>(f.body);
    if (!m.ok()) End(m.status(), false);
    return m;
  }

  void Unexpected(const Frame& f) {
    End(DataLossError("unexpected message type " + std::to_string(f.type)), true);
  }

  const ClientOptions& opt_;
  UniqueFd fd_;
  FrameDecoder decoder_;
  State state_ = State::kAwaitingChallenge;
  uint32_t attempt_;  // the round heartbeats name: opt_.attempt, or the promoted round
  Steady::time_point next_beat_;
  Steady::time_point last_heard_;
  JoinResult result_;
  Ending ending_;
};

}  // namespace

Session::Session(UniqueFd fd, FrameDecoder decoder, uint32_t attempt, const Clock& clock)
    : fd_(std::move(fd)),
      decoder_(std::move(decoder)),
      attempt_(attempt),
      clock_(clock),
      last_heard_(clock_.Now()) {}

std::vector<ServerEvent> Session::OnReadable() {
  std::vector<ServerEvent> events;
  std::string bytes;
  StatusOr<net::ReadResult> r = net::ReadAvailable(fd_.get(), &bytes);
  if (!r.ok()) {
    events.push_back({ServerEvent::Kind::kClosed, {}, r.status().ToString()});
    return events;
  }
  if (r->bytes > 0) last_heard_ = clock_.Now();
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
      StatusOr<Abort> abort = Decode<Abort>(f.body);
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
  return net::WriteAll(fd_.get(), bytes, clock_.Now() + milliseconds(2000));
}

Status Session::SendHeartbeat() { return Send(Encode(Heartbeat{attempt_})); }
Status Session::SendFailure(const protocol::Failure& f) { return Send(Encode(f)); }
Status Session::SendDone(bool ends_job) {
  return Send(Encode(protocol::Done{attempt_, ends_job}));
}
Status Session::SendStarted() { return Send(Encode(protocol::Started{attempt_})); }

StatusOr<JoinResult> JoinRound(const ClientOptions& opt) {
  milliseconds backoff(50);
  Status last = UnavailableError("never connected");
  bool logged = false;
  while (opt.clock->Now() < opt.deadline) {
    if (Interrupted(opt.interrupt_fd)) {
      return CancelledError("interrupted by a signal during rendezvous");
    }
    const Steady::time_point connect_deadline =
        std::min(opt.deadline, opt.clock->Now() + milliseconds(5000));
    StatusOr<UniqueFd> fd = net::ConnectTcp(opt.endpoint, connect_deadline);
    if (fd.ok()) {
      std::variant<JoinResult, Ending> outcome = Connection(opt, std::move(*fd)).Run();
      if (JoinResult* joined = std::get_if<JoinResult>(&outcome)) return std::move(*joined);
      Ending& ending = std::get<Ending>(outcome);
      if (!ending.retry) return ending.status;
      last = ending.status;
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
           static_cast<int>(std::min<int64_t>(backoff.count(), net::MillisUntil(opt.deadline))));
    backoff = std::min(backoff * 2, milliseconds(1000));
  }
  return DeadlineExceededError("rendezvous did not complete before the join deadline: " +
                               last.message());
}

}  // namespace lockstep::launcher::rendezvous
