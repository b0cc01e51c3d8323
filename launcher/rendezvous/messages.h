#pragma once
// The rendezvous protocol's messages and their body codecs. Pure.
//
// A session: the server sends Challenge on accept; the client answers Join (with an HMAC over the
// nonce, see auth.h); the server answers Refuse and closes, or, when the round completes, an
// optional PeerTable then World. While children run, both sides send Heartbeat every interval; a
// client reports Failure or Done; the server sends Abort to end the round for everyone.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/rendezvous/frame.h"

namespace lockstep::launcher::rendezvous {

// 2: World carries the member's role rank and role size (so PyTorch needs no peer table).
inline constexpr uint32_t kProtocolVersion = 2;
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
};

struct Done {
  uint32_t attempt = 0;
};

struct Abort {
  uint32_t attempt = 0;
  std::string reason;       // "peer-lost", "exit", "signal", "hang", ...
  int32_t node_rank = -1;   // the launcher that failed or was lost
  std::string message;
  bool restartable = true;  // false once a node finished: the gang cannot re-form in place
};

std::string Encode(const Challenge& m);
std::string Encode(const Join& m);
std::string Encode(const Refuse& m);
std::string Encode(const PeerTable& m);
std::string Encode(const WorldMsg& m);
std::string Encode(const Heartbeat& m);
std::string Encode(const Failure& m);
std::string Encode(const Done& m);
std::string Encode(const Abort& m);

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

// Decodes any frame's body by its type; used by the fuzz target. Unknown types are errors.
Status DecodeAny(const Frame& frame);

}  // namespace lockstep::launcher::rendezvous
