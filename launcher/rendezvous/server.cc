#include "launcher/rendezvous/server.h"

#include <algorithm>
#include <vector>

#include "common/log.h"
#include "common/net.h"
#include "launcher/rendezvous/rank_assignment.h"
#include "protocol/auth.h"
#include "protocol/control.h"

namespace lockstep::launcher::rendezvous {

using protocol::Abort;
using protocol::Challenge;
using protocol::ControlRequest;
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
using protocol::RefuseCode;
using protocol::RoundFailure;
using protocol::Started;
using protocol::WorldMsg;
using std::chrono::milliseconds;

namespace {
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
  std::unique_ptr<RendezvousServer> server(new RendezvousServer(std::move(options), bound));
  std::vector<UniqueFd> listeners;
  listeners.push_back(std::move(fd));
  LS_RETURN_IF_ERROR(server->server_.Listen(std::move(listeners)));
  return server;
}

net::ConnectionLimits RendezvousServer::Limits(const ServerOptions& options) {
  net::ConnectionLimits limits;
  limits.max_connections =
      options.max_connections != 0 ? options.max_connections : 2 * options.max_nodes + 128;
  limits.max_unauthenticated =
      options.max_unauthenticated != 0 ? options.max_unauthenticated : options.max_nodes + 64;
  limits.pre_auth_timeout = options.auth_timeout;
  limits.pre_auth_bytes = kMaxUnauthenticatedFrameBytes;
  limits.read_budget = kMemberReadBytes;
  limits.max_queued_bytes = kMaxPendingOutBytes;
  limits.linger_discard_bytes = kMaxDiscardBytes;
  limits.linger_timeout = options.closing_timeout;
  return limits;
}

RendezvousServer::RendezvousServer(ServerOptions options, uint16_t port)
    : opt_(std::move(options)),
      mac_key_(protocol::AttemptKey(opt_.token, opt_.attempt)),
      control_key_(protocol::AttemptKey(opt_.token, opt_.attempt)),
      port_(port),
      attempt_(opt_.attempt),
      lost_(opt_.max_nodes),
      server_(this, Limits(opt_), kLogPrefix, opt_.clock) {}

RendezvousServer::~RendezvousServer() { Stop(); }

void RendezvousServer::Start() {
  next_tick_ = opt_.clock->Now() + opt_.heartbeat_interval;
  gather_start_ = opt_.clock->Now();
  server_.Start();
}

void RendezvousServer::Stop() { server_.Stop(); }

std::optional<Clock::Steady> RendezvousServer::OnTimer(Clock::Steady now) {
  if (now >= next_tick_) OnTick(now);
  MaybeComplete();
  active_members_.store(phase_ == Phase::kGathering ? 0u
                                                    : static_cast<uint32_t>(members_.size()));
  if (last_call_deadline_ && *last_call_deadline_ < next_tick_) return last_call_deadline_;
  return next_tick_;
}

void RendezvousServer::OnOpen(net::ConnId id) {
  StatusOr<std::string> nonce = nonces_.Next();
  if (!nonce.ok()) {
    log::Error(std::string(kLogPrefix) + "no randomness for a nonce",
               {{"error", nonce.status().ToString()}});
    server_.Close(id, "no randomness for a nonce");
    return;
  }
  auto conn = std::make_unique<Conn>();
  Conn& c = *conn;
  c.id = id;
  c.last_seen = opt_.clock->Now();
  c.nonce = *nonce;
  conns_[id] = std::move(conn);
  Challenge challenge;
  challenge.nonce = c.nonce;
  Queue(c, Encode(challenge));
}

void RendezvousServer::SetState(Conn& c, ConnState state) {
  c.state = state;
  if (state == ConnState::kClosing) return;
  // Authenticated: it may send any protocol frame, and leaves the queue the caps evict from.
  server_.Authenticate(c.id);
  c.decoder.set_max_frame_bytes(protocol::kMaxFrameBytes);
}

void RendezvousServer::SendLast(Conn& c, std::string_view bytes, bool half_close) {
  const net::ConnId id = c.id;
  // Closing first: a failed write then closes a connection that is no member any more.
  SetState(c, ConnState::kClosing);
  server_.Send(id, bytes);
  server_.Linger(id, half_close);
}

void RendezvousServer::Queue(Conn& c, std::string_view bytes) { server_.Send(c.id, bytes); }

void RendezvousServer::CloseConn(net::ConnId id, const std::string& why) { server_.Close(id, why); }

bool RendezvousServer::OnData(net::ConnId id, std::string* in) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second->state == ConnState::kClosing) {
    in->clear();
    return true;
  }
  Conn& c = *it->second;
  // Only an authenticated peer's bytes keep it alive; the others have their fixed deadline.
  if (c.state != ConnState::kAwaitJoin) c.last_seen = opt_.clock->Now();
  c.decoder.Append(*in);
  in->clear();
  HandleFrames(c);
  return true;
}

void RendezvousServer::HandleFrames(Conn& c) {
  const net::ConnId id = c.id;
  while (conns_.count(id) != 0 && c.state != ConnState::kClosing) {
    StatusOr<std::optional<Frame>> frame = c.decoder.Next();
    if (!frame.ok()) return CloseConn(id, "protocol error: " + frame.status().message());
    if (!frame->has_value()) break;
    Status s = OnFrame(c, **frame);
    if (!s.ok()) return CloseConn(id, "protocol error: " + s.message());
  }
  // Refused or answered: what it sent after that frame is dropped, not kept.
  if (conns_.count(id) != 0 && c.state == ConnState::kClosing) {
    c.decoder = FrameDecoder(kMaxUnauthenticatedFrameBytes);
  }
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
      // The round's start, for the operator's goodput (ControlStatus::running_since_unix_ms).
      if (running_since_unix_ms_ == 0 && phase_ == Phase::kRunning &&
          std::all_of(members_.begin(), members_.end(), [this](const auto& member) {
            auto it = conns_.find(member.second);
            return it != conns_.end() && it->second->started;
          })) {
        running_since_unix_ms_ = WallNowUnixMs();
        log::Info(std::string(kLogPrefix) + "round running",
                  {{"attempt", std::to_string(attempt_)},
                   {"members", std::to_string(members_.size())}});
      }
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
  members_[join.node_rank] = c.id;
  return Status::Ok();
}

void RendezvousServer::Refuse(Conn& c, RefuseCode code, const std::string& reason) {
  log::Warning(std::string(kLogPrefix) + "refused a connection", {{"reason", reason}});
  protocol::Refuse refuse;
  refuse.code = code;
  refuse.reason = reason;
  // Half-close: the refusal is delivered, and the peer's close ends the connection.
  SendLast(c, Encode(refuse), /*half_close=*/true);
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
  for (const auto& [node_rank, id] : members_) {
    const Join& j = conns_.at(id)->join;
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
  std::vector<std::pair<net::ConnId, std::string>> sends;
  sends.reserve(assignment->peers.size());
  for (const PeerEntry& p : assignment->peers) {
    const net::ConnId id = members_.at(p.node_rank);
    Conn& c = *conns_.at(id);
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
    sends.emplace_back(id, std::move(bytes));
  }
  phase_ = Phase::kRunning;
  running_since_unix_ms_ = 0;
  last_call_deadline_.reset();
  const uint32_t round = attempt_;
  for (const auto& [id, bytes] : sends) {
    // A failed write aborts the round (lost peer); the rest then get Abort, not a stale World.
    if (attempt_ != round) break;
    auto it = conns_.find(id);
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
  for (net::ConnId id : ConnsIn({ConnState::kMember})) {
    auto it = conns_.find(id);
    if (it != conns_.end()) Queue(*it->second, bytes);
  }
}

void RendezvousServer::AbortRound(FailureReason reason, int node_rank,
                                  const std::string& message, std::optional<RoundFailure> cause,
                                  bool spare_promoted, uint64_t failed_unix_ms) {
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
    cause->failed_unix_ms = failed_unix_ms != 0 ? failed_unix_ms : WallNowUnixMs();
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
  for (net::ConnId id : ConnsIn({ConnState::kMember, ConnState::kWaiting})) {
    // Clients reconnect for the next attempt.
    auto it = conns_.find(id);
    if (it != conns_.end()) SendLast(*it->second, bytes, /*half_close=*/false);
  }
  members_.clear();
  ++attempt_;
  phase_ = Phase::kGathering;
  running_since_unix_ms_ = 0;
  last_call_deadline_.reset();
  gather_start_ = opt_.clock->Now();
}

void RendezvousServer::OnTick(Clock::Steady now) {
  next_tick_ = now + opt_.heartbeat_interval;
  // Connections still to authenticate, and closing ones, have the transport's deadlines.
  const std::string beat = Encode(Heartbeat{attempt_});
  std::vector<net::ConnId> silent;
  for (net::ConnId id : ConnsIn({ConnState::kMember, ConnState::kWaiting, ConnState::kStandby})) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;  // a failed send closed it
    if (now - it->second->last_seen > opt_.peer_timeout) {
      silent.push_back(id);
    } else {
      Queue(*it->second, beat);
    }
  }
  // After the heartbeats: a loss aborts the round, and the others' Abort follows their beat.
  for (net::ConnId id : silent) CloseConn(id, "no heartbeat within the peer timeout");
}

std::vector<net::ConnId> RendezvousServer::ConnsIn(std::initializer_list<ConnState> states) const {
  std::vector<net::ConnId> ids;
  for (const auto& [id, conn] : conns_) {
    if (std::find(states.begin(), states.end(), conn->state) != states.end()) ids.push_back(id);
  }
  return ids;
}

void RendezvousServer::OnClose(net::ConnId id, const net::CloseInfo& info) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> conn = std::move(it->second);
  conns_.erase(it);
  const std::string& why = info.why;
  if (conn->state == ConnState::kStandby) {
    spares_.RemoveStandby(id);
    log::Info(std::string(kLogPrefix) + "a standby spare left",
              {{"spare_index", std::to_string(conn->join.spare_index)}, {"why", why}});
    return;
  }
  if (conn->state != ConnState::kMember) return;
  const uint32_t node_rank = conn->join.node_rank;
  members_.erase(node_rank);
  const uint64_t lost_at = RecordLost(*conn, why, info.disconnected);
  if (phase_ == Phase::kGathering) {
    log::Info(std::string(kLogPrefix) + "a node left before the round completed",
              {{"node_rank", std::to_string(node_rank)}, {"why", why}});
    return;
  }
  if (PromoteSpare(conn->join, why, lost_at)) return;
  AbortRound(FailureReason::kPeerLost, static_cast<int>(node_rank),
             "node " + std::to_string(node_rank) + " lost: " + why, std::nullopt,
             /*spare_promoted=*/false, lost_at);
}

}  // namespace lockstep::launcher::rendezvous
