#pragma once
// The rendezvous server that node 0's launcher hosts. One thread runs one epoll loop for every
// peer (no thread per peer), so a round of 8,192 launchers costs one small frame each way.
//
// Rounds: a round (attempt N) gathers authenticated joins of attempt N and completes when
// max_nodes joined, or when at least min_nodes joined and the last-call window passed. It then
// hands each member its ranks and a fresh NCCL unique id and watches heartbeats. A member that
// goes silent for peer_timeout or disconnects, or reports a failure, aborts the round: every
// member gets Abort and the server waits for attempt N+1. A member that reports Done switches the
// round to finishing: later losses still abort, but without a restart.
//
// Hot spares (spares.h, docs/launcher.md "Hot spares"): a standby spare's join (Join::standby)
// is kept apart from every round, heartbeated like a member. When a member of a running round is
// lost (silent past peer_timeout, or disconnected) and a spare stands by, the abort says
// spare_promoted (the others rejoin without charging their budget), and the spare's connection
// becomes a member of the next round with the lost node-rank (Promote), so the next round
// completes with no new pod. Node 0 (which hosts this server) is never replaced. When the round
// starts finishing, standby spares are released (Abort kFinished).
//
// Control requests (protocol/control.h) come from the operator on their own connections: Status
// reports the round, the in-place restarts so far, the last failure, the trainers' progress
// (ServerOptions::progress_source) and the members lost in the newest round that lost any
// (lost_members.h: pod, node, when last heard, silent or disconnected); Restart aborts a running
// round like a failure would, with Abort::reason kRequested, which no launcher charges to its
// budget. A refused or closed control connection never touches the round.
//
// Bounds: any pod that reaches the port can connect, so what an unauthenticated or refused peer
// costs is bounded in memory and time, whatever it sends (docs/launcher.md "Limits"); the
// transport (launcher/net/connection_server.h) enforces them, with these figures:
//   - before it authenticates (a Join or Control with a valid MAC) a connection buffers at most
//     one frame of kMaxUnauthenticatedFrameBytes, and must authenticate within auth_timeout of its
//     accept: bytes it sends meanwhile do not extend that;
//   - a refused or answered connection (kClosing) keeps nothing it sends: up to
//     kMaxDiscardBytes are read and dropped (so a polite peer's close is seen), then the server
//     stops reading, and closes it closing_timeout after the answer at the latest;
//   - at most max_unauthenticated connections wait to authenticate or close: a new one closes
//     the oldest of them (so idle connections cannot lock the real launchers out, who connect
//     again), and at most max_connections in all (beyond that a new connection is closed at once);
//   - a member's pending output is bounded (kMaxPendingOutBytes): a peer that stops reading is
//     closed, as a silent one is.
//
// Thread safety: Start/Stop/port/ActiveMembers from one owning thread (ActiveMembers from any);
// everything else runs on the transport's loop thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/net/connection_server.h"
#include "launcher/rendezvous/lost_members.h"
#include "launcher/rendezvous/spares.h"
#include "protocol/auth.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "protocol/contract.h"

namespace lockstep::launcher::rendezvous {

// A frame before authentication: a Join (three strings of at most 8 KiB) or a Control fits.
inline constexpr size_t kMaxUnauthenticatedFrameBytes = 32u << 10;
inline constexpr size_t kMaxDiscardBytes = 64u << 10;
inline constexpr size_t kMaxPendingOutBytes = 16u << 20;
// A join (or a standby spare's) asking for more processes per node is refused.
inline constexpr uint32_t kMaxNprocPerNode = 1u << 16;

struct ServerOptions {
  std::string run_id;
  // The job's token; joins and control requests are checked with AttemptKey(token, attempt)
  // (protocol/auth.h, protocol/control.h).
  std::string token;
  // Local use only (--insecure-no-auth): an empty token is accepted. Otherwise Listen refuses one,
  // since anybody can compute a MAC keyed by nothing.
  bool insecure_no_auth = false;
  // The attempt the operator created node 0's pod for (LOCKSTEP_ATTEMPT): the first round, and
  // the attempt whose key every join must be made with, in every later in-place round too.
  uint32_t attempt = 0;
  uint32_t min_nodes = 1;
  uint32_t max_nodes = 1;
  std::chrono::milliseconds last_call{10000};
  std::chrono::milliseconds peer_timeout = protocol::contract::kDefaultPeerTimeout;
  std::chrono::milliseconds heartbeat_interval = protocol::contract::kDefaultHeartbeatInterval;
  // The launchers' --max-restarts: an aborted running round is an in-place restart (counted in
  // ControlStatus::failure_restarts) while the launchers still have budget for it.
  uint32_t max_restarts = 0;
  // Returns a fresh 128-byte NCCL unique id, or "" when NCCL is not loadable. Called on the loop
  // thread once per completed round.
  std::function<std::string()> nccl_id_source;
  // The trainers' latest progress report (ControlStatus::progress), or nullopt; unset: none.
  // Called on the loop thread once per Status request, so it must be quick and bounded
  // (progress/progress_file.h).
  std::function<std::optional<protocol::TrainingProgress>()> progress_source;
  const Clock* clock = &RealClock::Get();
  // Bounds (above). 0 for the connection caps: max_nodes + 64 waiting to authenticate, and
  // 2 * max_nodes + 128 in all (members, late joiners, the operator's control requests).
  std::chrono::milliseconds auth_timeout{10000};
  std::chrono::milliseconds closing_timeout{2000};
  uint32_t max_unauthenticated = 0;
  uint32_t max_connections = 0;
};

class RendezvousServer final : private net::ConnectionHandler {
 public:
  // Binds `port` (0 = any) before returning, so clients may connect as soon as it exists.
  static StatusOr<std::unique_ptr<RendezvousServer>> Listen(ServerOptions options, uint16_t port);
  ~RendezvousServer() override;

  uint16_t port() const { return port_; }
  void Start();
  void Stop();
  // Members of a running or finishing round that have not reported Done; 0 while gathering.
  // Node 0 waits for this to reach 0 before leaving, so peers never lose their server early.
  uint32_t ActiveMembers() const { return active_members_.load(); }

 private:
  enum class ConnState { kAwaitJoin, kMember, kWaiting, kClosing, kStandby };
  enum class Phase { kGathering, kRunning, kFinishing };
  // A connection's place in the rounds; the transport owns its socket and buffers.
  struct Conn {
    net::ConnId id = 0;
    protocol::FrameDecoder decoder{kMaxUnauthenticatedFrameBytes};
    ConnState state = ConnState::kAwaitJoin;
    std::string nonce;
    protocol::Join join;
    Clock::Steady last_seen;  // the last bytes of an authenticated peer
    uint32_t first_rank = 0;  // of the member's local rank 0, once the round completed
    bool started = false;     // the member's children run (Started for the current round)
  };

  RendezvousServer(ServerOptions options, uint16_t port);
  // The transport's bounds (server.h "Bounds") from the options.
  static net::ConnectionLimits Limits(const ServerOptions& options);

  // net::ConnectionHandler: the transport (launcher/net/connection_server.h) calls these.
  void OnOpen(net::ConnId id) override;
  bool OnData(net::ConnId id, std::string* in) override;
  void OnClose(net::ConnId id, const net::CloseInfo& info) override;
  std::optional<Clock::Steady> OnTimer(Clock::Steady now) override;

  // Decodes and handles the frames `c` has buffered, until it closes or stops being read.
  void HandleFrames(Conn& c);
  Status OnFrame(Conn& c, const protocol::Frame& frame);
  Status OnJoin(Conn& c, const protocol::Join& join);
  void OnControl(Conn& c, const protocol::ControlRequest& request);
  protocol::ControlStatus CurrentStatus() const;
  void Refuse(Conn& c, protocol::RefuseCode code, const std::string& reason);
  void MaybeComplete();
  void CompleteRound();
  // A member whose success ends the job finished (Done::ends_job), or the last member that is
  // not a parameter server did (OnlyParameterServersLeft): the others are told to stop.
  void EndJob(const Conn& finished);
  // Every member still in the round is a TensorFlow parameter server ("ps"): they serve until
  // stopped, so nothing is left for them to do. A PS job without a chief (TensorFlow 1's
  // between-graph pattern, Kubeflow TFJob's dist-mnist) ends this way once every worker is done;
  // with a chief, the chief's Done ends it first.
  bool OnlyParameterServersLeft() const;
  // `cause`: what failed (recorded as the last failure); null for a requested restart.
  // `spare_promoted`: a standby spare takes `node_rank` in the next round (Promote follows).
  // `failed_unix_ms`: the failure's evidence (RoundFailure::failed_unix_ms); 0: now.
  void AbortRound(protocol::FailureReason reason, int node_rank, const std::string& message,
                  std::optional<protocol::RoundFailure> cause = std::nullopt,
                  bool spare_promoted = false, uint64_t failed_unix_ms = 0);
  // A standby spare's join (Join::standby): kept for promotion, or refused.
  void OnStandbyJoin(Conn& c, const protocol::Join& join);
  // A member of a running round was lost: a standby spare takes its node-rank in the next
  // round (true), or there is none to take it, or the round cannot be served by one (false).
  bool PromoteSpare(const protocol::Join& lost, const std::string& why, uint64_t failed_unix_ms);
  // The round is finishing: standby spares are not needed any more.
  void ReleaseStandbySpares();
  void OnTick(Clock::Steady now);
  // Every state change of a connection goes through here: an authenticated one leaves the
  // transport's pre-auth bounds and may send larger frames.
  void SetState(Conn& c, ConnState state);
  // `c`'s last frame to it (an answer, a refusal, an abort): it closes (kClosing), and what it
  // sends from now on is dropped (net::ConnectionServer::Linger).
  void SendLast(Conn& c, std::string_view bytes, bool half_close);
  void Queue(Conn& c, std::string_view bytes);
  void CloseConn(net::ConnId id, const std::string& why);
  // `disconnected`: the peer's connection closed or reset (EOF, a read or write error), as
  // opposed to a silent or misbehaving peer the server gives up on; a lost member's report says
  // which (LostMember::disconnected). Returns the loss's evidence, unix ms: its close when
  // disconnected, else the last bytes heard from it.
  uint64_t RecordLost(const Conn& c, const std::string& why, bool disconnected);
  uint64_t WallNowUnixMs() const;
  std::vector<net::ConnId> ConnsIn(std::initializer_list<ConnState> states) const;

  ServerOptions opt_;
  // opt_.token, keyed once (a join's MAC check is on the hot path).
  protocol::JoinMacKey mac_key_;
  // AttemptKey(opt_.token, opt_.attempt): control requests' MAC key (protocol/control.h).
  std::string control_key_;
  protocol::NonceSource nonces_{protocol::kNonceBytes};
  uint16_t port_;
  std::unordered_map<net::ConnId, std::unique_ptr<Conn>> conns_;
  uint32_t attempt_;
  Phase phase_ = Phase::kGathering;
  std::map<uint32_t, net::ConnId> members_;  // node rank -> connection, for the current attempt
  std::optional<Clock::Steady> last_call_deadline_;
  Clock::Steady next_tick_;
  Clock::Steady gather_start_;
  std::atomic<uint32_t> active_members_{0};
  // In-place restarts of running rounds so far, and the cause of the last failed round.
  uint32_t failure_restarts_ = 0;
  uint32_t requested_restarts_ = 0;
  std::optional<protocol::RoundFailure> last_failure_;
  // When the current round began running (its last member's Started), unix ms; 0 until then.
  uint64_t running_since_unix_ms_ = 0;
  SparePool spares_;
  LostMembers lost_;
  // Declared last, so destroyed first: its loop ends before the state its callbacks use goes.
  net::ConnectionServer server_;
};

}  // namespace lockstep::launcher::rendezvous
