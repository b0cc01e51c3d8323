#pragma once
// The rendezvous protocol's messages and their body codecs. Pure.
//
// A session: the server sends Challenge on accept; the client answers Join (with an HMAC over the
// nonce, see auth.h); the server answers Refuse and closes, or, when the round completes, an
// optional PeerTable then World. While children run, both sides send Heartbeat every interval; a
// client reports Started (its children run), Failure or Done; the server sends Abort to end the
// round for everyone. A control session (control.h: the operator's Status and Restart) answers
// the Challenge with Control instead of Join.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/rendezvous/frame.h"

namespace lockstep::launcher::rendezvous {

// 2: World carries the member's role rank and role size (so PyTorch needs no peer table).
// 3: Started, Failure's stderr tail, and the control messages (control.h).
inline constexpr uint32_t kProtocolVersion = 3;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;  // HMAC-SHA256
inline constexpr size_t kNcclIdBytes = 128;
inline constexpr uint32_t kMaxPeers = 1u << 17;

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
  kControl = 11,        // control.h
  kControlStatus = 12,  // control.h
  kControlAck = 13,     // control.h
};

struct Challenge {
  uint32_t version = kProtocolVersion;
  std::string nonce;  // kNonceBytes
};

struct Join {
  uint32_t version = kProtocolVersion;
  std::string run_id;
  uint32_t attempt = 0;
  uint32_t node_rank = 0;  // the launcher's --node-rank (pod index)
  std::string role;
  uint32_t role_index = 0;
  std::string host;
  uint32_t port = 0;
  uint32_t nproc = 1;
  bool want_peer_table = false;
  std::string mac;  // kMacBytes
};

// Why the server refused a join. Every refusal is final for that launcher.
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
  RefuseCode code = RefuseCode::kProtocol;
  std::string reason;
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
};

struct PeerTable {
  std::vector<PeerEntry> peers;  // indexed by group rank
};

// What each launcher needs to start its children; O(1) in the world size so a round of
// thousands costs the server one small frame per client. The full table is opt-in (PeerTable).
struct WorldMsg {
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
};

struct Heartbeat {
  uint32_t attempt = 0;
};

struct Failure {
  uint32_t attempt = 0;
  int32_t rank = -1;        // global rank of the first failing child, -1 if none (e.g. hang)
  int32_t exit_code = 0;
  int32_t signal = 0;
  std::string reason;       // "exit", "signal", "hang"
  std::string message;
  // The failing child's last stderr lines (at most kMaxTailLines, each cut to kMaxTailLineBytes),
  // so the server can tell the operator why without the pod's termination message.
  std::vector<std::string> stderr_tail = {};
};
inline constexpr uint32_t kMaxTailLines = 20;
inline constexpr size_t kMaxTailLineBytes = 512;

// The stderr tail on the wire (Failure, and control.h's RoundFailure): a count, then the last
// kMaxTailLines lines, each cut to kMaxTailLineBytes.
class WireWriter;
class WireReader;
void PutStderrTail(WireWriter& w, const std::vector<std::string>& tail);
Status GetStderrTail(WireReader& r, std::vector<std::string>* tail);

// Sent once the member's children for `attempt` were started: the operator's "running round".
struct Started {
  uint32_t attempt = 0;
};

struct Done {
  uint32_t attempt = 0;
  // The sender's success ends the job for everyone (a TensorFlow chief beside ps and worker
  // servers that never exit by themselves): the server tells the other members to stop their
  // children and leave with success (Abort::reason kAbortFinished).
  bool ends_job = false;
};

struct Abort {
  uint32_t attempt = 0;
  std::string reason;       // "peer-lost", "exit", "signal", "hang", ...
  int32_t node_rank = -1;   // the launcher that failed or was lost
  std::string message;
  bool restartable = true;  // false once a node finished: the gang cannot re-form in place
};
// Abort::reason of a restart the operator asked for (control.h): every launcher rejoins the next
// round, and none charges it to its --max-restarts budget.
inline constexpr std::string_view kAbortRequested = "requested";
// Abort::reason when a member whose success ends the job finished (Done::ends_job): the others
// stop their children and exit 0.
inline constexpr std::string_view kAbortFinished = "finished";
// Failure::reason (and so Abort::reason) of an exit code the job's FailJob rules name
// (--fail-exit-codes): the round ends without an in-place restart and costs no budget.
inline constexpr std::string_view kFailurePermanent = "permanent";

std::string Encode(const Challenge& m);
std::string Encode(const Join& m);
std::string Encode(const Refuse& m);
std::string Encode(const PeerTable& m);
std::string Encode(const WorldMsg& m);
std::string Encode(const Heartbeat& m);
std::string Encode(const Failure& m);
std::string Encode(const Done& m);
std::string Encode(const Abort& m);
std::string Encode(const Started& m);

// Decoders take a frame's body (its type already checked) and reject trailing bytes.
StatusOr<Challenge> DecodeChallenge(std::string_view body);
StatusOr<Join> DecodeJoin(std::string_view body);
StatusOr<Refuse> DecodeRefuse(std::string_view body);
StatusOr<PeerTable> DecodePeerTable(std::string_view body);
StatusOr<WorldMsg> DecodeWorld(std::string_view body);
StatusOr<Heartbeat> DecodeHeartbeat(std::string_view body);
StatusOr<Failure> DecodeFailure(std::string_view body);
StatusOr<Done> DecodeDone(std::string_view body);
StatusOr<Abort> DecodeAbort(std::string_view body);
StatusOr<Started> DecodeStarted(std::string_view body);

// Decodes any frame's body by its type; used by the fuzz target. Unknown types are errors.
Status DecodeAny(const Frame& frame);

}  // namespace lockstep::launcher::rendezvous
