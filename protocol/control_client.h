#pragma once
// The operator's one-request control client (control.h): connect to node 0's rendezvous server,
// answer its Challenge with a Control request, read the answer, close. Blocking, with one
// deadline for the whole exchange, so an absent or hostile peer costs at most that long.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace lockstep::protocol {

struct ControlTarget {
  std::string host;  // worker-0 pod's IP
  uint16_t port = 0;
  std::string run_id;  // LOCKSTEP_RDZV_ID: the job's uid
  std::string token;   // the job's rendezvous token; never logged, never sent
  uint32_t attempt = 0;  // the worker-0 pod's attempt (LOCKSTEP_ATTEMPT): the MAC's key is
                         // AttemptKey(token, attempt) (control.h)
};

struct ControlReply {
  std::optional<ControlStatus> status;  // for kStatus
  std::optional<ControlAck> ack;        // for kRestart
};

// The server's answer to a control request: ControlStatus, ControlAck, or Refuse (an error
// carrying its reason). Pure; ControlCall's last step, and fuzzed (tests/fuzz/control).
StatusOr<ControlReply> ParseControlAnswer(const Frame& answer);

// One request, blocking at most `timeout` in total (connect, challenge, reply). Errors:
// Unavailable (no connection, the peer closed), DeadlineExceeded, PermissionDenied (refused:
// the message is the server's reason), DataLoss (not the protocol).
StatusOr<ControlReply> ControlCall(const ControlTarget& target, ControlKind kind,
                                   std::string_view reason, std::chrono::milliseconds timeout);

}  // namespace lockstep::protocol
