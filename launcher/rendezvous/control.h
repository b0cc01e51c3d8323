#pragma once
// Control requests on the rendezvous server: how the operator asks node 0's launcher what the
// gang is doing (Status) and makes it restart the gang in place (Restart). Pure codecs, the MAC
// and a blocking one-request client (ControlCall) with a deadline, so the operator can use it
// without the rest of the launcher (library lockstep_rdzv_control).
//
// A control session: the server sends Challenge on accept (as for a join); the client answers
// Control{version, run_id, kind, reason, mac} with
//   mac = HMAC-SHA256(token, "lockstep-control" | nonce | run_id | kind | reason)
// (length-prefixed fields; the label keeps a control MAC from ever equalling a join MAC); the
// server answers ControlStatus or ControlAck, or Refuse (bad MAC, other run, bad version), and
// closes. A control session is never a member: refusing it, or its close, leaves the round alone.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/rendezvous/messages.h"

namespace lockstep::launcher::rendezvous {

enum class ControlKind : uint8_t {
  kStatus = 1,
  kRestart = 2,
};

struct ControlRequest {
  uint32_t version = kProtocolVersion;
  std::string run_id;
  ControlKind kind = ControlKind::kStatus;
  std::string reason;  // kRestart: why (the operator's words, logged); kStatus: empty
  std::string mac;     // kMacBytes, ControlMac()
};

// The cause of the most recent round abort that was not requested.
struct RoundFailure {
  uint32_t round = 0;      // the round it ended
  int32_t node_rank = -1;  // the launcher that reported or was lost
  int32_t rank = -1;       // global rank of the failing child, -1 when none (hang, lost peer)
  int32_t local_rank = -1;
  int32_t exit_code = 0;
  int32_t signal = 0;
  std::string reason;  // "exit", "signal", "hang", "peer-lost", "launcher", ...
  std::string message;
  std::vector<std::string> stderr_tail;
};

// What the server knows. Counters cover the server's lifetime (one pod of node 0 = one operator
// attempt): every in-place restart the launchers made, charged (failures) or requested.
struct ControlStatus {
  uint32_t round = 0;        // the round (launcher attempt) gathering or running now
  bool complete = false;     // the round completed (World sent) and is running or finishing
  bool running = false;      // complete, and every member reported Started
  uint32_t members = 0;      // members of the round
  uint32_t failure_restarts = 0;
  uint32_t requested_restarts = 0;
  std::optional<RoundFailure> last_failure;
};

struct ControlAck {
  bool accepted = false;
  uint32_t round = 0;   // the round the request aborted (accepted), or the current one
  std::string message;  // why not, when refused
};

std::string Encode(const ControlRequest& m);
std::string Encode(const ControlStatus& m);
std::string Encode(const ControlAck& m);
StatusOr<ControlRequest> DecodeControlRequest(std::string_view body);
StatusOr<ControlStatus> DecodeControlStatus(std::string_view body);
StatusOr<ControlAck> DecodeControlAck(std::string_view body);

std::string ControlMac(std::string_view token, std::string_view nonce, std::string_view run_id,
                       ControlKind kind, std::string_view reason);

struct ControlTarget {
  std::string host;
  uint16_t port = 0;
  std::string run_id;
  std::string token;  // never logged
};

struct ControlReply {
  std::optional<ControlStatus> status;  // for kStatus
  std::optional<ControlAck> ack;        // for kRestart
};

// One request, blocking at most `timeout` in total (connect, challenge, reply). Errors:
// Unavailable (no connection, the peer closed), DeadlineExceeded, PermissionDenied (refused:
// the message is the server's reason), DataLoss (not the protocol).
StatusOr<ControlReply> ControlCall(const ControlTarget& target, ControlKind kind,
                                   std::string_view reason, std::chrono::milliseconds timeout);

}  // namespace lockstep::launcher::rendezvous
