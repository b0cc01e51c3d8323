#include "launcher/rendezvous/server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "common/net.h"
#include "launcher/rendezvous/ranks.h"
#include "protocol/auth.h"
#include "protocol/control.h"

namespace lockstep::launcher::rendezvous {

using protocol::Abort;
using protocol::Challenge;
using protocol::ControlAck;
using protocol::ControlKind;
using protocol::ControlRequest;
using protocol::ControlStatus;
using protocol::Decode;
using protocol::Done;
using protocol::Encode;
using protocol::Failure;
using protocol::FailureReason;
using protocol::Frame;
using protocol::FrameDecoder;
using protocol::Heartbeat;
using protocol::Join;
using protocol::MessageType;
using protocol::PeerEntry;
using protocol::PeerTable;
using protocol::Promote;
using protocol::RefuseCode;
using protocol::RoundFailure;
using protocol::Started;
using protocol::WorldMsg;
using std::chrono::milliseconds;

struct RendezvousServer::Conn {
  UniqueFd fd;
  FrameDecoder decoder{kMaxUnauthenticatedFrameBytes};
  std::string out;
  size_t out_pos = 0;
  bool want_write = false;
  bool reading = true;  // false once a closing connection sent kMaxDiscardBytes
  ConnState state = ConnState::kAwaitJoin;
  uint64_t seq = 0;         // accept order: the key in evictable_
  Clock::Steady deadline;   // kAwaitJoin: authenticate by; kClosing: closed at. Never extended
  size_t discarded = 0;     // bytes read and dropped while kClosing
  std::string nonce;
  Join join;
  Clock::Steady last_seen;  // the last bytes of an authenticated peer
  uint32_t first_rank = 0;  // of the member's local rank 0, once the round completed
  bool started = false;     // the member's children run (Started for the current round)
};

namespace {
constexpr uint32_t kMaxNprocPerNode = 1u << 16;
// TensorFlow's parameter-server task type, as roles name it (launcher/world.h).
constexpr char kParameterServerRole[] = "ps";
// One read of an authenticated peer (net::ReadAvailable's default, as before): a busy peer
// cannot hold the loop from the others.
constexpr size_t kMemberReadBytes = 1u << 20;
const char* kLogPrefix = "rendezvous server: ";
}  // namespace

StatusOr<std::unique_ptr<RendezvousServer>> RendezvousServer::Listen(ServerOptions options,
                                                                      uint16_t port) {
  if (options.min_nodes == 0 || options.min_nodes > options.max_nodes) {
    return InvalidArgumentError("rendezvous server: need 0 < min_nodes <= max_nodes");
  }
  if (options.token.empty() && !options.insecure_no_auth) {
    return InvalidArgumentError(
        "rendezvous server: no token, so any peer could join; give one (--token-file or "
        "LOCKSTEP_TOKEN), or --insecure-no-auth for local use");
  }
  net::RaiseFileLimit();
  LS_ASSIGN_OR_RETURN(UniqueFd fd, net::ListenTcp(port));
  LS_ASSIGN_OR_RETURN(uint16_t bound, net::LocalPort(fd.get()));
  return std::unique_ptr<RendezvousServer>(
      new RendezvousServer(std::move(options), std::move(fd), bound));
}

RendezvousServer::RendezvousServer(ServerOptions options, UniqueFd listen_fd, uint16_t port)
    : opt_(std::move(options)),
      mac_key_(protocol::AttemptKey(opt_.token, opt_.attempt)),
      control_key_(protocol::AttemptKey(opt_.token, opt_.attempt)),
      listen_fd_(std::move(listen_fd)),
      epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      port_(port),
      max_unauthenticated_(opt_.max_unauthenticated != 0 ? opt_.max_unauthenticated
                                                         : opt_.max_nodes + 64),
      max_connections_(opt_.max_connections != 0 ? opt_.max_connections : 2 * opt_.max_nodes + 128),
      attempt_(opt_.attempt),
      lost_(opt_.max_nodes) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_.get();
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
  ev.data.fd = wake_fd_.get();
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
}

RendezvousServer::~RendezvousServer() { Stop(); }

void RendezvousServer::Start() {
  next_tick_ = opt_.clock->Now() + opt_.heartbeat_interval;
  gather_start_ = opt_.clock->Now();
  thread_ = std::thread([this] { Loop(); });
}

void RendezvousServer::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof(one));
  thread_.join();
}

void RendezvousServer::Loop() {
  std::vector<epoll_event> events(1024);
  for (;;) {
    int n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                         static_cast<int>(NextTimeout().count()));
    if (n < 0 && errno != EINTR) {
      log::Error(std::string(kLogPrefix) + "epoll_wait failed", {{"error", strerror(errno)}});
      return;
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      const uint32_t what = events[static_cast<size_t>(i)].events;
      if (fd == wake_fd_.get()) return;
      if (fd == listen_fd_.get()) {
        AcceptAll();
        continue;
      }
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;  // closed earlier in this batch
      if (what & EPOLLOUT) OnWritable(*it->second);
      it = conns_.find(fd);
      if (it != conns_.end() && (what & (EPOLLIN | EPOLLHUP | EPOLLERR))) OnReadable(*it->second);
    }
    if (opt_.clock->Now() >= next_tick_) OnTick();
    MaybeComplete();
    active_members_.store(
        phase_ == Phase::kGathering ? 0u : static_cast<uint32_t>(members_.size()));
  }
}

milliseconds RendezvousServer::NextTimeout() const {
  Clock::Steady next = next_tick_;
  if (last_call_deadline_ && *last_call_deadline_ < next) next = *last_call_deadline_;
  auto left = std::chrono::duration_cast<milliseconds>(next - opt_.clock->Now());
  return left.count() < 0 ? milliseconds(0) : left + milliseconds(1);
}

void RendezvousServer::AcceptAll() {
  for (;;) {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        log::Warning(std::string(kLogPrefix) + "accept failed", {{"error", strerror(errno)}});
      }
      return;
    }
    UniqueFd owned(fd);
    if (!MakeRoom()) {
      ++shed_since_log_;
      continue;  // closed on scope exit
    }
    // TCP_NODELAY comes from the listening socket (net::ListenTcp).
    auto conn = std::make_unique<Conn>();
    conn->fd = std::move(owned);
    conn->last_seen = opt_.clock->Now();
    conn->seq = ++accepted_;
    conn->deadline = conn->last_seen + opt_.auth_timeout;
    StatusOr<std::string> nonce = nonces_.Next();
    if (!nonce.ok()) {
      log::Error(std::string(kLogPrefix) + "no randomness for a nonce",
                 {{"error", nonce.status().ToString()}});
      continue;  // conn closes on scope exit
    }
    conn->nonce = *nonce;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev);
    Conn& c = *conn;
    conns_[fd] = std::move(conn);
    evictable_[c.seq] = fd;
    Challenge challenge;
    challenge.nonce = c.nonce;
    Queue(c, Encode(challenge));
  }
}

bool RendezvousServer::MakeRoom() {
  const bool full = conns_.size() >= max_connections_;
  if (!full && evictable_.size() < max_unauthenticated_) return true;
  if (evictable_.empty()) return false;
  // The oldest has had the longest to authenticate; a real launcher closed here connects again.
  ++shed_since_log_;
  CloseConn(evictable_.begin()->second, "closed for a newer connection");
  return true;
}

void RendezvousServer::SetState(Conn& c, ConnState state) {
  const ConnState was = c.state;
  c.state = state;
  if (state == ConnState::kClosing) {
    if (was != ConnState::kClosing) {
      c.deadline = opt_.clock->Now() + opt_.closing_timeout;
      evictable_[c.seq] = c.fd.get();
    }
    return;
  }
  // Authenticated: it may send any protocol frame, and leaves the queue the caps evict from.
  evictable_.erase(c.seq);
  c.decoder.set_max_frame_bytes(protocol::kMaxFrameBytes);
}

void RendezvousServer::UpdateEvents(Conn& c) {
  epoll_event ev{};
  ev.events = (c.reading ? EPOLLIN : 0u) | (c.want_write ? EPOLLOUT : 0u);
  ev.data.fd = c.fd.get();
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void RendezvousServer::Queue(Conn& c, std::string_view bytes) {
  if (c.out.size() - c.out_pos + bytes.size() > kMaxPendingOutBytes) {
    CloseConn(c.fd.get(), "the peer does not read what the server sends");
    return;
  }
  if (c.out_pos == c.out.size()) {
    c.out.clear();
    c.out_pos = 0;
    // Nothing pending (the usual case): send straight from `bytes` and buffer only what the
    // socket did not take, instead of copying every challenge and world into `out` first.
    const int fd = c.fd.get();
    StatusOr<size_t> n = net::WriteSome(fd, bytes);
    if (!n.ok()) {
      CloseConn(fd, n.status().ToString(), /*disconnected=*/true);
      return;
    }
    if (*n == bytes.size()) return;
    bytes.remove_prefix(*n);
  }
  c.out.append(bytes);
  OnWritable(c);
}

void RendezvousServer::OnWritable(Conn& c) {
  const int fd = c.fd.get();
  StatusOr<size_t> n = net::WriteSome(fd, std::string_view(c.out).substr(c.out_pos));
  if (!n.ok()) {
    CloseConn(fd, n.status().ToString(), /*disconnected=*/true);
    return;
  }
  c.out_pos += *n;
  const bool pending = c.out_pos < c.out.size();
  if (pending != c.want_write) {
    c.want_write = pending;
    UpdateEvents(c);
  }
}

void RendezvousServer::Discard(Conn& c) {
  const int fd = c.fd.get();
  // Not reading: only a hang-up or an error wakes it.
  if (!c.reading) return CloseConn(fd, "the peer closed the connection");
  std::string bytes;
  StatusOr<net::ReadResult> r = net::ReadAvailable(fd, &bytes, kMaxDiscardBytes - c.discarded);
  if (!r.ok()) return CloseConn(fd, r.status().ToString());
  if (r->eof) return CloseConn(fd, "the peer closed the connection");
  c.discarded += r->bytes;
  if (c.discarded >= kMaxDiscardBytes) {
    // It keeps sending after its answer: let TCP's window stop it until closing_timeout.
    c.reading = false;
    UpdateEvents(c);
  }
}

void RendezvousServer::OnReadable(Conn& c) {
  if (c.state == ConnState::kClosing) return Discard(c);
  const int fd = c.fd.get();
  const bool authenticated = c.state != ConnState::kAwaitJoin;
  std::string bytes;
  StatusOr<net::ReadResult> r = net::ReadAvailable(
      fd, &bytes, authenticated ? kMemberReadBytes : kMaxUnauthenticatedFrameBytes);
  if (!r.ok()) {
    CloseConn(fd, r.status().ToString(), /*disconnected=*/true);
    return;
  }
  if (r->bytes > 0) {
    // Only an authenticated peer's bytes keep it alive; the others have their fixed deadline.
    if (authenticated) c.last_seen = opt_.clock->Now();
    c.decoder.Append(bytes);
  }
  while (conns_.count(fd) != 0 && c.state != ConnState::kClosing) {
    StatusOr<std::optional<Frame>> frame = c.decoder.Next();
    if (!frame.ok()) {
      CloseConn(fd, "protocol error: " + frame.status().message());
      return;
    }
    if (!frame->has_value()) break;
    Status s = OnFrame(c, **frame);
    if (!s.ok()) {
      CloseConn(fd, "protocol error: " + s.message());
      return;
    }
  }
  if (conns_.count(fd) == 0) return;
  // Refused or answered: what it sent after that frame is dropped, not kept.
  if (c.state == ConnState::kClosing) c.decoder = FrameDecoder(kMaxUnauthenticatedFrameBytes);
  if (r->eof) CloseConn(fd, "peer closed the connection", /*disconnected=*/true);
}

Status RendezvousServer::OnFrame(Conn& c, const Frame& frame) {
  const auto type = static_cast<MessageType>(frame.type);
  if (c.state == ConnState::kAwaitJoin) {
    if (type == MessageType::kControl) {
      StatusOr<ControlRequest> request = Decode<ControlRequest>(frame.body);
      if (!request.ok()) {
        Refuse(c, RefuseCode::kProtocol, "bad control request: " + request.status().message());
        return Status::Ok();
      }
      OnControl(c, *request);
      return Status::Ok();
    }
    if (type != MessageType::kJoin) return DataLossError("expected a join");
    LS_ASSIGN_OR_RETURN(Join join, Decode<Join>(frame.body));
    return OnJoin(c, join);
  }
  switch (type) {
    case MessageType::kHeartbeat:
      return Decode<Heartbeat>(frame.body).status();
    case MessageType::kStarted: {
      LS_ASSIGN_OR_RETURN(Started st, Decode<Started>(frame.body));
      if (c.state == ConnState::kMember && st.attempt == attempt_) c.started = true;
      return Status::Ok();
    }
    case MessageType::kFailure: {
      LS_ASSIGN_OR_RETURN(Failure f, Decode<Failure>(frame.body));
      if (c.state == ConnState::kMember && f.attempt == attempt_ && phase_ != Phase::kGathering) {
        RoundFailure cause;
        cause.node_rank = static_cast<int32_t>(c.join.node_rank);
        cause.rank = f.rank;
        if (f.rank >= 0) cause.local_rank = f.rank - static_cast<int32_t>(c.first_rank);
        cause.exit_code = f.exit_code;
        cause.signal = f.signal;
        cause.reason = f.reason;
        cause.message = f.message;
        cause.stderr_tail = f.stderr_tail;
        AbortRound(f.reason, static_cast<int>(c.join.node_rank), f.message, std::move(cause));
      }
      return Status::Ok();
    }
    case MessageType::kDone: {
      LS_ASSIGN_OR_RETURN(Done d, Decode<Done>(frame.body));
      if (c.state == ConnState::kMember && d.attempt == attempt_ && phase_ == Phase::kRunning) {
        log::Info(std::string(kLogPrefix) + "a node finished; the round is finishing",
                  {{"node_rank", std::to_string(c.join.node_rank)}});
        phase_ = Phase::kFinishing;
        ReleaseStandbySpares();
      }
      if (c.state == ConnState::kMember) {
        // A finished member may leave without that counting as a lost peer.
        members_.erase(c.join.node_rank);
        SetState(c, ConnState::kWaiting);
        if (d.attempt == attempt_ && (d.ends_job || OnlyParameterServersLeft())) EndJob(c);
      }
      return Status::Ok();
    }
    default:
      return DataLossError("unexpected message type " + std::to_string(frame.type));
  }
}

Status RendezvousServer::OnJoin(Conn& c, const Join& join) {
  const std::string who = "node " + std::to_string(join.node_rank);
  if (join.version != protocol::kProtocolVersion) {
    Refuse(c, RefuseCode::kProtocol, "protocol version " + std::to_string(join.version) +
                                         " unsupported (server speaks " +
                                         std::to_string(protocol::kProtocolVersion) + ")");
    return Status::Ok();
  }
  if (join.key_attempt != opt_.attempt) {
    // A launcher of another attempt (its pod of an earlier attempt still running, say on a lost
    // node): its key is not this attempt's, whatever round it reached by restarting in place.
    Refuse(c, RefuseCode::kStaleAttempt,
           who + ": a launcher of attempt " + std::to_string(join.key_attempt) + " is " +
               (join.key_attempt < opt_.attempt ? "stale" : "ahead") +
               "; this server serves attempt " + std::to_string(opt_.attempt));
    return Status::Ok();
  }
  const std::string expected = mac_key_.Mac(c.nonce, join.run_id, join.attempt, join.node_rank);
  if (!protocol::MacEquals(expected, join.mac)) {
    Refuse(c, RefuseCode::kBadToken, who + ": authentication failed (wrong rendezvous token)");
    return Status::Ok();
  }
  if (join.run_id != opt_.run_id) {
    Refuse(c, RefuseCode::kOtherRun,
           who + ": run id '" + join.run_id + "' does not match this server's run id");
    return Status::Ok();
  }
  if (join.standby) {
    // A spare stands by across rounds: it joins whatever round the server is at.
    OnStandbyJoin(c, join);
    return Status::Ok();
  }
  // Before the round check: a replaced launcher learns why, whatever round it reached.
  if (std::optional<std::string> fenced = spares_.Fence(join.node_rank, join.spare_index)) {
    Refuse(c, RefuseCode::kDuplicateNode, who + ": " + *fenced);
    return Status::Ok();
  }
  if (join.attempt != attempt_) {
    Refuse(c, RefuseCode::kStaleAttempt,
           who + ": attempt " + std::to_string(join.attempt) + " is " +
               (join.attempt < attempt_ ? "stale" : "ahead") + "; the server is at attempt " +
               std::to_string(attempt_));
    return Status::Ok();
  }
  if (join.node_rank >= opt_.max_nodes) {
    Refuse(c, RefuseCode::kBadNodeRank,
           who + ": node rank outside 0.." + std::to_string(opt_.max_nodes - 1));
    return Status::Ok();
  }
  if (join.nproc == 0 || join.nproc > kMaxNprocPerNode) {
    Refuse(c, RefuseCode::kProtocol, who + ": bad nproc " + std::to_string(join.nproc));
    return Status::Ok();
  }
  if (members_.count(join.node_rank) != 0) {
    Refuse(c, RefuseCode::kDuplicateNode, who + ": node rank already joined attempt " +
                                              std::to_string(attempt_));
    return Status::Ok();
  }
  c.join = join;
  if (phase_ != Phase::kGathering) {
    // Exclusivity: a late node waits for the next round instead of forming a parallel group.
    SetState(c, ConnState::kWaiting);
    log::Info(std::string(kLogPrefix) + "late node waits for the next round",
              {{"node_rank", std::to_string(join.node_rank)}});
    return Status::Ok();
  }
  SetState(c, ConnState::kMember);
  members_[join.node_rank] = c.fd.get();
  return Status::Ok();
}

void RendezvousServer::OnStandbyJoin(Conn& c, const Join& join) {
  const std::string who = "spare " + std::to_string(join.spare_index);
  if (join.nproc == 0 || join.nproc > kMaxNprocPerNode) {
    Refuse(c, RefuseCode::kProtocol, who + ": bad nproc " + std::to_string(join.nproc));
    return;
  }
  if (std::optional<std::string> refused = spares_.AdmitStandby(join.spare_index, c.fd.get())) {
    Refuse(c, RefuseCode::kDuplicateNode, who + ": " + *refused);
    return;
  }
  c.join = join;
  SetState(c, ConnState::kStandby);
  log::Info(std::string(kLogPrefix) + "a spare stands by",
            {{"spare_index", std::to_string(join.spare_index)},
             {"standby", std::to_string(spares_.standby())}});
  if (phase_ == Phase::kFinishing) ReleaseStandbySpares();
}

bool RendezvousServer::PromoteSpare(const Join& lost, const std::string& why) {
  // Node 0 hosts this server and the framework's stores: a spare cannot stand in for it.
  if (phase_ != Phase::kRunning || lost.node_rank == 0) return false;
  std::optional<int> taken = spares_.TakeStandby();
  if (!taken) return false;
  auto it = conns_.find(*taken);
  if (it == conns_.end()) return false;  // closed in this batch; the pool forgot it too
  Conn& spare = *it->second;
  const uint32_t node_rank = lost.node_rank;
  const int32_t spare_index = spare.join.spare_index;
  AbortRound(FailureReason::kPeerLost, static_cast<int>(node_rank),
             "node " + std::to_string(node_rank) + " lost: " + why + "; spare " +
                 std::to_string(spare_index) + " takes its node rank",
             std::nullopt, /*spare_promoted=*/true);
  // The spare is a member of the next round at once: the round completes as soon as the other
  // members rejoin, with no new pod.
  spare.join.node_rank = node_rank;
  spare.join.role = lost.role;
  spare.join.role_index = lost.role_index;
  spare.join.attempt = attempt_;
  spare.join.standby = false;
  SetState(spare, ConnState::kMember);
  members_[node_rank] = spare.fd.get();
  spares_.RecordPromotion(node_rank, spare_index, attempt_, spare.join.host);
  log::Warning(std::string(kLogPrefix) + "promoted a spare",
               {{"node_rank", std::to_string(node_rank)},
                {"spare_index", std::to_string(spare_index)},
                {"attempt", std::to_string(attempt_)},
                {"promotions", std::to_string(spares_.promotions())}});
  Queue(spare, Encode(Promote{attempt_, node_rank, lost.role, lost.role_index}));
  return true;
}

void RendezvousServer::ReleaseStandbySpares() {
  Abort abort;
  abort.attempt = attempt_;
  abort.reason = FailureReason::kFinished;
  abort.message = "the job is finishing; the spare is not needed";
  abort.restartable = false;
  const std::string bytes = Encode(abort);
  std::vector<int> targets;
  for (const auto& [fd, conn] : conns_) {
    if (conn->state == ConnState::kStandby) targets.push_back(fd);
  }
  for (int fd : targets) {
    spares_.RemoveStandby(fd);
    Conn& c = *conns_.at(fd);
    SetState(c, ConnState::kClosing);
    Queue(c, bytes);
  }
}

void RendezvousServer::OnControl(Conn& c, const ControlRequest& request) {
  if (request.version != protocol::kProtocolVersion) {
    Refuse(c, RefuseCode::kProtocol, "control: protocol version " +
                                         std::to_string(request.version) + " unsupported");
    return;
  }
  // Keyed by this launcher's attempt (control.h): a request for another attempt's launchers
  // fails here like a wrong token.
  const std::string expected =
      protocol::ControlMac(control_key_, c.nonce, request.run_id, request.kind, request.reason);
  if (!protocol::MacEquals(expected, request.mac)) {
    Refuse(c, RefuseCode::kBadToken,
           "control: authentication failed (wrong rendezvous token, or a request for another "
           "attempt's launchers)");
    return;
  }
  if (request.run_id != opt_.run_id) {
    Refuse(c, RefuseCode::kOtherRun, "control: run id does not match this server's run id");
    return;
  }
  std::string answer;
  if (request.kind == ControlKind::kStatus) {
    answer = Encode(CurrentStatus());
  } else {
    ControlAck ack;
    ack.round = attempt_;
    if (phase_ == Phase::kRunning) {
      log::Warning(std::string(kLogPrefix) + "restart requested",
                   {{"attempt", std::to_string(attempt_)}, {"reason", request.reason}});
      ack.accepted = true;
      AbortRound(FailureReason::kRequested, -1, "restart requested: " + request.reason);
    } else {
      ack.message = "round " + std::to_string(attempt_) + " is " +
                    (phase_ == Phase::kGathering ? "still gathering" : "finishing") +
                    "; nothing to restart";
    }
    answer = Encode(ack);
  }
  const int fd = c.fd.get();
  SetState(c, ConnState::kClosing);
  Queue(c, answer);
  if (conns_.count(fd) != 0) ::shutdown(fd, SHUT_WR);
}

ControlStatus RendezvousServer::CurrentStatus() const {
  ControlStatus st;
  st.round = attempt_;
  st.complete = phase_ != Phase::kGathering;
  st.members = static_cast<uint32_t>(members_.size());
  st.running = phase_ == Phase::kRunning && !members_.empty();
  for (const auto& [node_rank, fd] : members_) {
    auto it = conns_.find(fd);
    if (it == conns_.end() || !it->second->started) st.running = false;
  }
  st.failure_restarts = failure_restarts_;
  st.requested_restarts = requested_restarts_;
  st.last_failure = last_failure_;
  if (opt_.progress_source) st.progress = opt_.progress_source();
  st.promotions = spares_.promotions();
  st.standby_spares = spares_.standby();
  st.serving = spares_.Serving();
  st.lost = lost_.List();
  return st;
}

void RendezvousServer::Refuse(Conn& c, RefuseCode code, const std::string& reason) {
  log::Warning(std::string(kLogPrefix) + "refused a connection", {{"reason", reason}});
  protocol::Refuse refuse;
  refuse.code = code;
  refuse.reason = reason;
  const int fd = c.fd.get();
  SetState(c, ConnState::kClosing);
  Queue(c, Encode(refuse));
  if (conns_.count(fd) == 0) return;  // the write failed, which closed (and freed) it
  // Half-close: the refusal is delivered, and the peer's close ends the connection.
  ::shutdown(fd, SHUT_WR);
}

void RendezvousServer::MaybeComplete() {
  if (phase_ != Phase::kGathering) return;
  const size_t joined = members_.size();
  if (joined >= opt_.max_nodes) {
    CompleteRound();
    return;
  }
  if (joined < opt_.min_nodes) {
    last_call_deadline_.reset();
    return;
  }
  if (!last_call_deadline_) last_call_deadline_ = opt_.clock->Now() + opt_.last_call;
  if (opt_.clock->Now() >= *last_call_deadline_) CompleteRound();
}

void RendezvousServer::CompleteRound() {
  std::vector<Member> members;
  members.reserve(members_.size());
  bool want_table = false;
  for (const auto& [node_rank, fd] : members_) {
    const Join& j = conns_.at(fd)->join;
    members.push_back(Member{j.node_rank, j.role, j.role_index, j.host, j.port, j.nproc});
    want_table = want_table || j.want_peer_table;
  }
  StatusOr<Assignment> assignment = AssignRanks(std::move(members));
  if (!assignment.ok()) {
    AbortRound(FailureReason::kRendezvous, -1, assignment.status().message());
    return;
  }
  WorldMsg world;
  world.attempt = attempt_;
  world.nnodes = static_cast<uint32_t>(assignment->peers.size());
  world.world_size = assignment->world_size;
  world.master_host = assignment->peers.front().host;
  if (opt_.nccl_id_source) world.nccl_id = opt_.nccl_id_source();
  // Role ranks (PyTorch's ROLE_RANK/ROLE_WORLD_SIZE) for every member, so the compact world
  // needs no peer table: one pass for the role sizes, the prefix as members are visited.
  std::unordered_map<std::string, uint32_t> role_size, role_next;
  for (const PeerEntry& p : assignment->peers) role_size[p.role] += p.nproc;
  // The peer table is encoded once and shared by every member that asked for it.
  std::string table;
  if (want_table) table = Encode(PeerTable{assignment->peers});
  const Clock::Steady now = opt_.clock->Now();
  std::vector<std::pair<int, std::string>> sends;
  sends.reserve(assignment->peers.size());
  for (const PeerEntry& p : assignment->peers) {
    const int fd = members_.at(p.node_rank);
    Conn& c = *conns_.at(fd);
    world.group_rank = p.group_rank;
    world.first_rank = p.first_rank;
    world.nproc = p.nproc;
    uint32_t& role_next_rank = role_next[p.role];
    world.role_first_rank = role_next_rank;
    world.role_world_size = role_size[p.role];
    role_next_rank += p.nproc;
    c.last_seen = now;
    c.first_rank = p.first_rank;
    c.started = false;
    std::string bytes = c.join.want_peer_table ? table : std::string();
    bytes += Encode(world);
    sends.emplace_back(fd, std::move(bytes));
  }
  phase_ = Phase::kRunning;
  last_call_deadline_.reset();
  const uint32_t round = attempt_;
  for (const auto& [fd, bytes] : sends) {
    // A failed write aborts the round (lost peer); the rest then get Abort, not a stale World.
    if (attempt_ != round) break;
    auto it = conns_.find(fd);
    if (it != conns_.end()) Queue(*it->second, bytes);
  }
  const auto took = std::chrono::duration_cast<milliseconds>(now - gather_start_);
  log::Info(std::string(kLogPrefix) + "round complete",
            {{"attempt", std::to_string(round)},
             {"nnodes", std::to_string(world.nnodes)},
             {"world_size", std::to_string(world.world_size)},
             {"nccl_id", world.nccl_id.empty() ? "none" : "set"},
             {"gather_ms", std::to_string(took.count())}});
}

bool RendezvousServer::OnlyParameterServersLeft() const {
  if (members_.empty()) return false;
  return std::all_of(members_.begin(), members_.end(), [this](const auto& member) {
    auto it = conns_.find(member.second);
    return it != conns_.end() && it->second->join.role == kParameterServerRole;
  });
}

void RendezvousServer::EndJob(const Conn& finished) {
  // Unlike an abort, the round stays: the others remain members until they report Done after
  // stopping their children, so node 0 keeps serving until every one of them has left.
  Abort abort;
  abort.attempt = attempt_;
  abort.reason = FailureReason::kFinished;
  abort.node_rank = static_cast<int32_t>(finished.join.node_rank);
  abort.message = "node " + std::to_string(finished.join.node_rank) + " (" + finished.join.role +
                  ") finished the job";
  abort.restartable = false;
  log::Info(std::string(kLogPrefix) + "the job is finished; stopping the other nodes",
            {{"node_rank", std::to_string(finished.join.node_rank)}});
  const std::string bytes = Encode(abort);
  std::vector<int> targets;
  for (const auto& [fd, conn] : conns_) {
    if (conn->state == ConnState::kMember) targets.push_back(fd);
  }
  for (int fd : targets) Queue(*conns_.at(fd), bytes);
}

void RendezvousServer::AbortRound(FailureReason reason, int node_rank,
                                  const std::string& message, std::optional<RoundFailure> cause,
                                  bool spare_promoted) {
  // Only a running round's abort restarts anybody's children; a requested one costs no budget,
  // a failure one only while the launchers have budget left (they agree: all count the same).
  const bool requested = reason == FailureReason::kRequested;
  const bool permanent = reason == FailureReason::kPermanent;
  if (phase_ == Phase::kRunning) {
    if (requested) {
      ++requested_restarts_;
    } else if (!permanent && !spare_promoted && failure_restarts_ < opt_.max_restarts) {
      ++failure_restarts_;
    }
  }
  if (!requested) {
    if (!cause) {
      cause.emplace();
      cause->node_rank = node_rank;
      cause->reason = reason;
      cause->message = message;
    }
    cause->round = attempt_;
    last_failure_ = std::move(cause);
  }
  log::Warning(std::string(kLogPrefix) + "aborting round",
               {{"attempt", std::to_string(attempt_)},
                {"reason", std::string(protocol::ToString(reason))},
                {"node_rank", std::to_string(node_rank)},
                {"message", message}});
  Abort abort;
  abort.attempt = attempt_;
  abort.reason = reason;
  abort.node_rank = node_rank;
  abort.message = message;
  abort.restartable = phase_ != Phase::kFinishing && !permanent;
  abort.spare_promoted = spare_promoted;
  const std::string bytes = Encode(abort);
  std::vector<int> targets;
  for (const auto& [fd, conn] : conns_) {
    if (conn->state == ConnState::kMember || conn->state == ConnState::kWaiting) {
      targets.push_back(fd);
    }
  }
  for (int fd : targets) {
    Conn& c = *conns_.at(fd);
    SetState(c, ConnState::kClosing);  // clients reconnect for the next attempt
    Queue(c, bytes);
  }
  members_.clear();
  ++attempt_;
  phase_ = Phase::kGathering;
  last_call_deadline_.reset();
  gather_start_ = opt_.clock->Now();
}

void RendezvousServer::OnTick() {
  const Clock::Steady now = opt_.clock->Now();
  next_tick_ = now + opt_.heartbeat_interval;
  if (shed_since_log_ > 0) {
    log::Warning(std::string(kLogPrefix) + "closed connections beyond the caps",
                 {{"closed", std::to_string(shed_since_log_)},
                  {"max_unauthenticated", std::to_string(max_unauthenticated_)},
                  {"max_connections", std::to_string(max_connections_)}});
    shed_since_log_ = 0;
  }
  std::vector<std::pair<int, const char*>> expired;
  const std::string beat = Encode(Heartbeat{attempt_});
  std::vector<int> fds;
  fds.reserve(conns_.size());
  for (const auto& [fd, conn] : conns_) fds.push_back(fd);
  for (int fd : fds) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) continue;
    Conn& c = *it->second;
    if (c.state == ConnState::kAwaitJoin || c.state == ConnState::kClosing) {
      if (now >= c.deadline) {
        expired.emplace_back(fd, c.state == ConnState::kAwaitJoin
                                     ? "did not authenticate within the auth timeout"
                                     : "closing timeout");
      }
      continue;
    }
    if (now - c.last_seen > opt_.peer_timeout) {
      expired.emplace_back(fd, "no heartbeat within the peer timeout");
      continue;
    }
    Queue(c, beat);
  }
  for (const auto& [fd, why] : expired) {
    if (conns_.count(fd) != 0) CloseConn(fd, why);
  }
}

void RendezvousServer::RecordLost(const Conn& c, const std::string& why, bool disconnected) {
  // The steady clock times the peer timeout; the report is in wall time, which the operator
  // compares with the node's Lease (docs/failures.md "Peer evidence").
  const auto unix_ms = [](Clock::Wall t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count());
  };
  const Clock::Wall wall_now = opt_.clock->WallNow();
  const auto silent_for = opt_.clock->Now() - c.last_seen;
  protocol::LostMember lost;
  lost.round = attempt_;
  lost.node_rank = c.join.node_rank;
  lost.pod_name = c.join.pod_name;
  lost.node_name = c.join.node_name;
  lost.pod_uid = c.join.pod_uid;
  lost.last_heard_unix_ms =
      unix_ms(wall_now - std::chrono::duration_cast<Clock::Wall::duration>(silent_for));
  lost.lost_unix_ms = unix_ms(wall_now);
  lost.disconnected = disconnected;
  lost.why = why;
  lost_.Record(std::move(lost));
}

void RendezvousServer::CloseConn(int fd, const std::string& why, bool disconnected) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> conn = std::move(it->second);
  conns_.erase(it);
  evictable_.erase(conn->seq);
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  if (conn->state == ConnState::kStandby) {
    spares_.RemoveStandby(fd);
    log::Info(std::string(kLogPrefix) + "a standby spare left",
              {{"spare_index", std::to_string(conn->join.spare_index)}, {"why", why}});
    return;
  }
  if (conn->state != ConnState::kMember) return;
  const uint32_t node_rank = conn->join.node_rank;
  members_.erase(node_rank);
  RecordLost(*conn, why, disconnected);
  if (phase_ == Phase::kGathering) {
    log::Info(std::string(kLogPrefix) + "a node left before the round completed",
              {{"node_rank", std::to_string(node_rank)}, {"why", why}});
    return;
  }
  if (PromoteSpare(conn->join, why)) return;
  AbortRound(FailureReason::kPeerLost, static_cast<int>(node_rank),
             "node " + std::to_string(node_rank) + " lost: " + why);
}

}  // namespace lockstep::launcher::rendezvous
