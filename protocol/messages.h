#pragma once
// Every message of the rendezvous protocol, in one place: its type byte, its fields and their
// wire order. Pure. How to add one, and when to bump kProtocolVersion: README.md.
//
// A launcher's session: the server sends Challenge on accept; the client answers Join (with an
// HMAC over the nonce, auth.h); the server answers Refuse and closes, or, when the round
// completes, an optional PeerTable then World. While children run, both sides send Heartbeat
// every interval; a client reports Started (its children run), Failure or Done; the server sends
// Abort to end the round for everyone.
// The operator's control session (control.h): it answers the Challenge with Control instead of
// Join; the server answers ControlStatus or ControlAck (or Refuse) and closes.
//
// Each message lists its body once, in `Fields(io, m)`, run by a WireWriter to encode and by a
// WireReader to decode (wire.h); a message whose fields must also agree with each other says
// how in `Check()`, which the decoder runs.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "protocol/failure_reason.h"
#include "protocol/frame.h"
#include "protocol/wire.h"

namespace lockstep::protocol {

// 2: World carries the member's role rank and role size (so PyTorch needs no peer table).
// 3: Started, Failure's stderr tail, and the control messages (control.h).
// 4: Join carries key_attempt, and its MAC is keyed by that attempt's key (auth.h AttemptKey).
// 5: ControlStatus carries the trainer's latest progress report (TrainingProgress).
// 6: hot spares: Join's standby and spare_index, Promote, Abort::spare_promoted, and
//    ControlStatus's promotions, standby spares and the node-ranks spares serve; and peer
//    evidence: Join carries the member's pod (name, uid) and node name, ControlStatus the
//    members the server lost (LostMember). (Two branches made version 6 at once; neither was
//    released alone, so it is one version.)
// 7: Control's MAC is keyed by the attempt's key (control.h), as Join's is since version 4. The
//    bytes of no message changed; a version-6 launcher's server would check the MAC with the
//    job's token and refuse every control request, so it is refused for its version instead.
// 8: TrainingProgress carries the trainers' checkpoint_step (status.goodput's recomputed steps,
//    docs/goodput.md).
// 9: RoundFailure carries failed_unix_ms (the failure's evidence) and ControlStatus
//    running_since_unix_ms (the current round's start), so the operator charges an in-place
//    restart's or a spare promotion's recovery from them (docs/goodput.md).
// Join, Challenge and Control carry it; the server refuses another version with a reason that
// names it (a launcher of another version never fails to decode instead).
inline constexpr uint32_t kProtocolVersion = 9;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;  // HMAC-SHA256
inline constexpr size_t kNcclIdBytes = 128;
inline constexpr uint32_t kMaxPeers = 1u << 17;
// What the operator accepts of the integers a Status answer carries (ControlStatus::Check), so
// every sum and int32 status field it feeds stays in range whatever worker-0 sends (worker-0 is
// the tenant's code: an init container can replace its launcher). Rounds and the server's
// lifetime counters (restarts, promotions): at one restart a second, half a year of them; twice
// that still fits an int32 (status.restarts adds two). Unix times in ms: before 2200, so
// nanosecond time points (to 2262) and the timeouts added to them cannot overflow.
inline constexpr uint32_t kMaxCounter = 1u << 24;
inline constexpr uint64_t kMaxUnixMs = 7'258'118'400'000;  // 2200-01-01T00:00:00Z
// Pod and node names are DNS subdomains (253 bytes); uids are UUIDs, given room.
inline constexpr uint32_t kMaxObjectNameBytes = 253;
inline constexpr uint32_t kMaxUidBytes = 128;
// A lost member's `why` and a promoted spare's `host` (the server's words, an advertised name).
inline constexpr uint32_t kMaxWhyBytes = 1024;
inline constexpr uint32_t kMaxHostBytes = 253;

enum class MessageType : uint8_t {
  kChallenge = 1,
  kJoin = 2,
  kRefuse = 3,
  kPeerTable = 4,
  kWorld = 5,
  kHeartbeat = 6,
  kFailure = 7,
  kDone = 8,
  kAbort = 9,
  kStarted = 10,
  kControl = 11,
  kControlStatus = 12,
  kControlAck = 13,
  kPromote = 14,
};

struct Challenge {
  static constexpr MessageType kType = MessageType::kChallenge;
  uint32_t version = kProtocolVersion;
  std::string nonce;  // kNonceBytes

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.version);
    io.Fixed(m.nonce, kNonceBytes);
  }
  friend bool operator==(const Challenge&, const Challenge&) = default;
};

struct Join {
  static constexpr MessageType kType = MessageType::kJoin;
  uint32_t version = kProtocolVersion;
  std::string run_id;
  // The attempt whose key (AttemptKey) made `mac`: the launcher's --attempt, which the operator
  // sets per attempt and in-place rounds never change. `attempt` is the round it joins.
  uint32_t key_attempt = 0;
  uint32_t attempt = 0;
  uint32_t node_rank = 0;  // the launcher's --node-rank (pod index)
  std::string role;
  uint32_t role_index = 0;
  std::string host;
  uint32_t port = 0;
  uint32_t nproc = 1;
  bool want_peer_table = false;
  std::string mac;  // kMacBytes
  // Hot spares (version 6). `spare_index`: the spare pod's index (its --role-index) when this
  // launcher runs in a spare pod (--spare), promoted or not; -1 for a gang pod. `standby`: it
  // joins as a standby spare (no node-rank, never in a world: the server keeps it until a member
  // is lost and then hands it that member's node-rank with Promote). `node_rank`, `role` and
  // `role_index` of a standby join mean nothing.
  bool standby = false;
  int32_t spare_index = -1;
  // Version 6: the launcher's pod and the node it runs on (LOCKSTEP_POD_NAME/LOCKSTEP_NODE_NAME,
  // the downward API), so a lost member can be named to the operator (LostMember). Empty when
  // unknown (a launcher run by hand). Not covered by the MAC: only ever reported, never trusted
  // for a decision (the operator checks the pod and node it names itself).
  std::string pod_name = {};
  std::string node_name = {};
  std::string pod_uid = {};  // LOCKSTEP_POD_UID: which pod object of that name

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.version);
    io.String(m.run_id);
    io.U32(m.key_attempt);
    io.U32(m.attempt);
    io.U32(m.node_rank);
    io.String(m.role);
    io.U32(m.role_index);
    io.String(m.host);
    io.U32(m.port);
    io.U32(m.nproc);
    io.Bool(m.want_peer_table);
    io.Fixed(m.mac, kMacBytes);
    io.Bool(m.standby);
    io.I32(m.spare_index);
    io.String(m.pod_name);
    io.String(m.node_name);
    io.String(m.pod_uid);
  }
  friend bool operator==(const Join&, const Join&) = default;
};

// Why the server refused a join or a control request. Every refusal is final for that launcher.
enum class RefuseCode : uint8_t {
  kBadToken = 1,
  kOtherRun = 2,
  kStaleAttempt = 3,
  kBadNodeRank = 4,
  kDuplicateNode = 5,
  kProtocol = 6,
  kRoundClosed = 7,
};

struct Refuse {
  static constexpr MessageType kType = MessageType::kRefuse;
  RefuseCode code = RefuseCode::kProtocol;
  std::string reason;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.Enum(m.code, RefuseCode::kBadToken, RefuseCode::kRoundClosed, "refuse code");
    io.String(m.reason);
  }
  friend bool operator==(const Refuse&, const Refuse&) = default;
};

struct PeerEntry {
  uint32_t group_rank = 0;  // position in the round (0..nnodes-1), follows node rank
  uint32_t node_rank = 0;   // the launcher's --node-rank
  std::string role;
  uint32_t role_index = 0;
  std::string host;
  uint32_t port = 0;
  uint32_t nproc = 1;
  uint32_t first_rank = 0;

  // At least this many bytes on the wire (six u32 and two empty strings' lengths).
  static constexpr size_t kMinBytes = 32;
  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.group_rank);
    io.U32(m.node_rank);
    io.String(m.role);
    io.U32(m.role_index);
    io.String(m.host);
    io.U32(m.port);
    io.U32(m.nproc);
    io.U32(m.first_rank);
  }
  friend bool operator==(const PeerEntry&, const PeerEntry&) = default;
};

struct PeerTable {
  static constexpr MessageType kType = MessageType::kPeerTable;
  std::vector<PeerEntry> peers;  // indexed by group rank

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.List(m.peers, kMaxPeers, PeerEntry::kMinBytes,
            [](auto& sub, auto& peer) { PeerEntry::Fields(sub, peer); });
  }
  friend bool operator==(const PeerTable&, const PeerTable&) = default;
};

// What each launcher needs to start its children; O(1) in the world size so a round of
// thousands costs the server one small frame per client. The full table is opt-in (PeerTable).
struct WorldMsg {
  static constexpr MessageType kType = MessageType::kWorld;
  uint32_t attempt = 0;
  uint32_t group_rank = 0;
  uint32_t nnodes = 0;
  uint32_t world_size = 0;
  uint32_t first_rank = 0;
  uint32_t nproc = 1;
  std::string master_host;  // group rank 0's advertised host
  std::string nccl_id;      // empty, or kNcclIdBytes
  // Processes of members sharing this member's role: those in lower group ranks (the global
  // rank of its local rank 0 within the role), and all of them. PyTorch's ROLE_RANK and
  // ROLE_WORLD_SIZE without the O(W) peer table.
  uint32_t role_first_rank = 0;
  uint32_t role_world_size = 0;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.attempt);
    io.U32(m.group_rank);
    io.U32(m.nnodes);
    io.U32(m.world_size);
    io.U32(m.first_rank);
    io.U32(m.nproc);
    io.String(m.master_host);
    io.String(m.nccl_id, kNcclIdBytes);
    io.U32(m.role_first_rank);
    io.U32(m.role_world_size);
  }
  // Ranks inside the round, the world and the role; an NCCL id of the right size.
  Status Check() const;
  friend bool operator==(const WorldMsg&, const WorldMsg&) = default;
};

// A message whose body is the sender's attempt (round) alone.
template <MessageType T>
struct AttemptMessage {
  static constexpr MessageType kType = T;
  uint32_t attempt = 0;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.attempt);
  }
  friend bool operator==(const AttemptMessage&, const AttemptMessage&) = default;
};

// Both ways, every --heartbeat-interval: a silent peer is a lost one.
using Heartbeat = AttemptMessage<MessageType::kHeartbeat>;
// Sent once the member's children for `attempt` were started: the operator's "running round".
using Started = AttemptMessage<MessageType::kStarted>;

struct Failure {
  static constexpr MessageType kType = MessageType::kFailure;
  uint32_t attempt = 0;
  int32_t rank = -1;  // global rank of the first failing child, -1 if none (e.g. hang)
  int32_t exit_code = 0;
  int32_t signal = 0;
  // kExit, kSignal, kHang, kPermanent (a --fail-exit-codes code) or kLauncher.
  FailureReason reason = FailureReason::kExit;
  std::string message;
  // The failing child's last stderr lines (at most kMaxTailLines, each cut to kMaxTailLineBytes),
  // so the server can tell the operator why without the pod's termination message.
  std::vector<std::string> stderr_tail = {};

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.attempt);
    io.I32(m.rank);
    io.I32(m.exit_code);
    io.I32(m.signal);
    io.Reason(m.reason);
    io.String(m.message);
    io.Tail(m.stderr_tail);
  }
  friend bool operator==(const Failure&, const Failure&) = default;
};

struct Done {
  static constexpr MessageType kType = MessageType::kDone;
  uint32_t attempt = 0;
  // The sender's success ends the job for everyone (a TensorFlow chief beside ps and worker
  // servers that never exit by themselves): the server tells the other members to stop their
  // children and leave with success (Abort::reason kFinished).
  bool ends_job = false;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.attempt);
    io.Bool(m.ends_job);
  }
  friend bool operator==(const Done&, const Done&) = default;
};

// The server ends the round for every member. `reason`: the Failure's reason, kPeerLost (a
// member silent or gone), kRendezvous (ranks could not be assigned), kRequested (the operator's
// Restart: every launcher rejoins the next round and none charges it to its --max-restarts), or
// kFinished (a member whose success ends the job finished: the others stop their children and
// exit 0). A kPermanent failure's abort is not restartable and costs no budget.
struct Abort {
  static constexpr MessageType kType = MessageType::kAbort;
  uint32_t attempt = 0;
  FailureReason reason = FailureReason::kPeerLost;
  int32_t node_rank = -1;  // the launcher that failed or was lost
  std::string message;
  bool restartable = true;  // false once a node finished: the gang cannot re-form in place
  // A standby spare took the lost node_rank in the next round (version 6): every other member
  // rejoins without charging its --max-restarts (as for kRequested), since no rank failed.
  bool spare_promoted = false;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.attempt);
    io.Reason(m.reason);
    io.I32(m.node_rank);
    io.String(m.message);
    io.Bool(m.restartable);
    io.Bool(m.spare_promoted);
  }
  friend bool operator==(const Abort&, const Abort&) = default;
};

// Server -> a standby spare (version 6): a member was lost and this spare serves its node-rank
// from round `attempt` on. The spare's connection is already a member of that round: it gets
// the round's World on it like any member, and joins later rounds with these values.
struct Promote {
  static constexpr MessageType kType = MessageType::kPromote;
  uint32_t attempt = 0;
  uint32_t node_rank = 0;
  std::string role;
  uint32_t role_index = 0;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.attempt);
    io.U32(m.node_rank);
    io.String(m.role);
    io.U32(m.role_index);
  }
  friend bool operator==(const Promote&, const Promote&) = default;
};

// --- The operator's control session (control.h). ---

enum class ControlKind : uint8_t {
  kStatus = 1,
  kRestart = 2,
};

struct ControlRequest {
  static constexpr MessageType kType = MessageType::kControl;
  uint32_t version = kProtocolVersion;
  std::string run_id;
  ControlKind kind = ControlKind::kStatus;
  std::string reason;  // kRestart: why (the operator's words, logged); kStatus: empty
  std::string mac;     // kMacBytes, ControlMac()

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.version);
    io.String(m.run_id);
    io.Enum(m.kind, ControlKind::kStatus, ControlKind::kRestart, "control kind");
    io.String(m.reason);
    io.String(m.mac, kMacBytes);
  }
  friend bool operator==(const ControlRequest&, const ControlRequest&) = default;
};

// The cause of the most recent round abort that was not requested.
struct RoundFailure {
  uint32_t round = 0;      // the round it ended
  int32_t node_rank = -1;  // the launcher that reported or was lost
  int32_t rank = -1;       // global rank of the failing child, -1 when none (hang, lost peer)
  int32_t local_rank = -1;
  int32_t exit_code = 0;
  int32_t signal = 0;
  FailureReason reason = FailureReason::kExit;  // the abort's reason
  std::string message;
  std::vector<std::string> stderr_tail;
  // Version 9: the failure's evidence on the server's wall clock, unix ms: a lost member's last
  // bytes (it fell silent) or its close (disconnected), else the abort. 0: not known.
  uint64_t failed_unix_ms = 0;

  // At most: u32 and five i32, the reason and message strings, the tail's count and lines, u64.
  static constexpr size_t kMaxBytes = 24 + 2 * (4 + kMaxStringBytes) + 4 +
                                      kMaxTailLines * (4 + kMaxTailLineBytes) + 8;
  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.round);
    io.I32(m.node_rank);
    io.I32(m.rank);
    io.I32(m.local_rank);
    io.I32(m.exit_code);
    io.I32(m.signal);
    io.Reason(m.reason);
    io.String(m.message);
    io.Tail(m.stderr_tail);
    io.U64(m.failed_unix_ms);
  }
  friend bool operator==(const RoundFailure&, const RoundFailure&) = default;
};

// The latest progress line node 0's trainers wrote to LOCKSTEP_PROGRESS_FILE
// (launcher/progress/progress_file.h parses it; docs/launcher.md "Progress").
struct TrainingProgress {
  uint64_t step = 0;
  uint64_t total_steps = 0;  // 0: the trainer did not say
  // Thousandths of a sample per second (fixed point: the wire has no floating point); 0: not
  // reported.
  uint64_t samples_per_second_milli = 0;
  // Lines of the file that were not a progress report (the server's lifetime): for people.
  uint32_t malformed_lines = 0;
  // The step the trainers' newest checkpoint holds ("checkpointStep"; version 8); absent: the
  // trainer did not say.
  std::optional<uint64_t> checkpoint_step = std::nullopt;

  static constexpr size_t kBytes = 37;  // at most: three u64, a u32, a flag and a u64
  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U64(m.step);
    io.U64(m.total_steps);
    io.U64(m.samples_per_second_milli);
    io.U32(m.malformed_lines);
    io.Optional(m.checkpoint_step, [](auto& sub, auto& c) { sub.U64(c); });
  }
  friend bool operator==(const TrainingProgress&, const TrainingProgress&) = default;
};

// A node-rank a promoted spare serves now (version 6): the operator reads which pod took over.
struct SpareServing {
  uint32_t node_rank = 0;
  uint32_t spare_index = 0;  // the spare pod's index
  uint32_t round = 0;        // the round it was promoted for
  std::string host;          // its advertised address (<pod>.<job>.<ns>.svc)

  static constexpr size_t kMinBytes = 16;  // three u32 and an empty string's length
  static constexpr size_t kMaxBytes = kMinBytes + kMaxHostBytes;
  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.node_rank);
    io.U32(m.spare_index);
    io.U32(m.round);
    io.String(m.host, kMaxHostBytes);
  }
  friend bool operator==(const SpareServing&, const SpareServing&) = default;
};

// A member the server lost while its round was running or forming (silent for the peer timeout,
// or its connection closed): the peer evidence the operator corroborates before it declares the
// node lost (operator/controller/peer_loss.h). Times are the server's wall clock, unix ms.
struct LostMember {
  uint32_t round = 0;  // the round it was a member of
  uint32_t node_rank = 0;
  std::string pod_name;   // Join::pod_name ("" when the launcher did not know it)
  std::string pod_uid;    // Join::pod_uid
  std::string node_name;  // Join::node_name
  uint64_t last_heard_unix_ms = 0;  // the last bytes the server read from it
  uint64_t lost_unix_ms = 0;        // when the server declared it lost
  // True: its connection closed (its launcher exited, taking its children with it, or the
  // connection was reset, which its launcher sees too). False: it fell silent, so its launcher
  // may still run until it notices the server's silence (a peer timeout later at most).
  bool disconnected = false;
  std::string why;

  // At least this many bytes on the wire (u32 x2, u64 x2, a bool, four empty strings' lengths).
  static constexpr size_t kMinBytes = 41;
  // At most (the longest names, uid and why the reader accepts; the writer cuts to them).
  static constexpr size_t kMaxBytes =
      kMinBytes + 2 * kMaxObjectNameBytes + kMaxUidBytes + kMaxWhyBytes;
  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.round);
    io.U32(m.node_rank);
    io.String(m.pod_name, kMaxObjectNameBytes);
    io.String(m.pod_uid, kMaxUidBytes);
    io.String(m.node_name, kMaxObjectNameBytes);
    io.U64(m.last_heard_unix_ms);
    io.U64(m.lost_unix_ms);
    io.Bool(m.disconnected);
    io.String(m.why, kMaxWhyBytes);
  }
  friend bool operator==(const LostMember&, const LostMember&) = default;
};

// What the server knows. Counters cover the server's lifetime (one pod of node 0 = one operator
// attempt): every in-place restart the launchers made, charged (failures) or requested.
struct ControlStatus {
  static constexpr MessageType kType = MessageType::kControlStatus;
  uint32_t round = 0;     // the round (launcher attempt) gathering or running now
  bool complete = false;  // the round completed (World sent) and is running or finishing
  bool running = false;   // complete, and every member reported Started
  uint32_t members = 0;   // members of the round
  uint32_t failure_restarts = 0;
  uint32_t requested_restarts = 0;
  std::optional<RoundFailure> last_failure;
  // Node 0's trainers' latest progress report, once they wrote one (version 5).
  std::optional<TrainingProgress> progress = std::nullopt;
  // Hot spares (version 6): promotions so far (the server's lifetime), standby spares connected
  // now, and every node-rank a promoted spare serves, by node-rank.
  uint32_t promotions = 0;
  uint32_t standby_spares = 0;
  std::vector<SpareServing> serving = {};
  // Version 6 too: the members lost in the newest round that lost any (at most max_nodes, one per
  // node rank). Kept after that round aborted: the lost node never rejoins the next round, and
  // the operator must still learn of it.
  std::vector<LostMember> lost = {};
  // Version 9: when the current round began running (its last member reported Started), the
  // server's wall clock in unix ms; 0 while it does not run.
  uint64_t running_since_unix_ms = 0;

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.U32(m.round);
    io.Bool(m.complete);
    io.Bool(m.running);
    io.U32(m.members);
    io.U32(m.failure_restarts);
    io.U32(m.requested_restarts);
    io.Optional(m.last_failure, [](auto& sub, auto& f) { RoundFailure::Fields(sub, f); });
    io.Optional(m.progress, [](auto& sub, auto& p) { TrainingProgress::Fields(sub, p); });
    io.U32(m.promotions);
    io.U32(m.standby_spares);
    io.List(m.serving, kMaxPeers, SpareServing::kMinBytes,
            [](auto& sub, auto& s) { SpareServing::Fields(sub, s); });
    io.List(m.lost, kMaxPeers, LostMember::kMinBytes,
            [](auto& sub, auto& l) { LostMember::Fields(sub, l); });
    io.U64(m.running_since_unix_ms);
  }
  // What any server's answer holds, whatever the job (the job's own bounds: control_client.h
  // CheckControlBounds): rounds and counters up to kMaxCounter, unix times up to kMaxUnixMs
  // (the lost members', the last failure's and running_since_unix_ms),
  // member and standby counts up to kMaxPeers, each node-rank at most once in `lost` and in
  // `serving`, each spare index at most once in `serving`. O(n log n) in the lists.
  Status Check() const;
  friend bool operator==(const ControlStatus&, const ControlStatus&) = default;
};

struct ControlAck {
  static constexpr MessageType kType = MessageType::kControlAck;
  bool accepted = false;
  uint32_t round = 0;   // the round the request aborted (accepted), or the current one
  std::string message;  // why not, when refused

  template <typename Io, typename M>
  static void Fields(Io& io, M& m) {
    io.Bool(m.accepted);
    io.U32(m.round);
    io.String(m.message);
  }
  friend bool operator==(const ControlAck&, const ControlAck&) = default;
};

// Every message, for DecodeAny and the tests that check each one round-trips.
using AllMessages = std::tuple<Challenge, Join, Refuse, PeerTable, WorldMsg, Heartbeat, Failure,
                               Started, Done, Abort, ControlRequest, ControlStatus, ControlAck,
                               Promote>;

// The frame carrying `m`.
template <typename M>
std::string Encode(const M& m) {
  WireWriter w;
  M::Fields(w, m);
  return EncodeFrame(static_cast<uint8_t>(M::kType), w.data());
}

// `M` from a frame's body (its type already checked). Trailing bytes are an error.
template <typename M>
StatusOr<M> Decode(std::string_view body) {
  WireReader r(body);
  M m;
  M::Fields(r, m);
  LS_RETURN_IF_ERROR(r.Finish());
  if constexpr (requires { m.Check(); }) LS_RETURN_IF_ERROR(m.Check());
  return m;
}

// Decodes any frame's body by its type; used by the fuzz target. Unknown types are errors.
Status DecodeAny(const Frame& frame);

}  // namespace lockstep::protocol
