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

// The size of the job whose worker-0 answers, which bounds what its answer may hold: worker-0 is
// the tenant's code (an init container can replace its launcher), and the operator is shared by
// every tenant. `node_ranks`: the gang's pods, every role (with elastic, the largest size an
// attempt may run at); `spares`: spec.failurePolicy.spareReplicas.
struct ControlBounds {
  uint32_t node_ranks = 0;
  uint32_t spares = 0;
  friend bool operator==(const ControlBounds&, const ControlBounds&) = default;
};

// The job's bounds on a Status answer (after ControlStatus::Check, which made node-ranks and
// spare indexes unique and the lists at most kMaxPeers long): members, lost members and served
// node-ranks at most `node_ranks`, each node-rank below it; the last failure's node-rank -1 or
// below it; standby spares and spare indexes below spares + node_ranks (a promoted spare's
// replacement takes the next free index, so indexes go past `spares` by at most the node-ranks
// served). OutOfRange names the first field out of bounds. O(job size).
Status CheckControlBounds(const ControlStatus& status, const ControlBounds& bounds);

// The longest frame (type byte and body, FrameDecoder's limit) of any answer to a job of
// `bounds`: a ControlStatus with every string at its longest, a RoundFailure and progress, one
// served and one lost entry per node-rank. At most kMaxFrameBytes. The control client reads no
// more than this from a job's worker-0, so what one answer costs the operator is O(job size).
size_t MaxControlAnswerFrameBytes(const ControlBounds& bounds);

struct ControlTarget {
  std::string host;  // worker-0 pod's IP
  uint16_t port = 0;
  std::string run_id;  // LOCKSTEP_RDZV_ID: the job's uid
  std::string token;   // the job's rendezvous token; never logged, never sent
  uint32_t attempt = 0;  // the worker-0 pod's attempt (LOCKSTEP_ATTEMPT): the MAC's key is
                         // AttemptKey(token, attempt) (control.h)
  // The job's size: when set, an answer beyond it (frame or content) is refused (OutOfRange).
  std::optional<ControlBounds> bounds = std::nullopt;
  // The job's "namespace/name", for the operator's logs and events about this target (its
  // refused answers: operator/controller/launcher_control.h); never sent.
  std::string job_key = {};
};

struct ControlReply {
  std::optional<ControlStatus> status;  // for kStatus
  std::optional<ControlAck> ack;        // for kRestart
};

// The server's answer to a control request: ControlStatus, ControlAck, or Refuse (an error
// carrying its reason). A ControlStatus beyond `bounds`, when given, is refused whole
// (CheckControlBounds). Pure; ControlCall's last step, and fuzzed (tests/fuzz/control,
// tests/fuzz/launcher_status).
StatusOr<ControlReply> ParseControlAnswer(const Frame& answer,
                                          const std::optional<ControlBounds>& bounds = {});

// One request, blocking at most `timeout` in total (connect, challenge, reply). Errors:
// Unavailable (no connection, the peer closed), DeadlineExceeded, PermissionDenied (refused:
// the message is the server's reason), DataLoss (not the protocol), OutOfRange (beyond
// target.bounds: a frame longer than MaxControlAnswerFrameBytes, or CheckControlBounds).
StatusOr<ControlReply> ControlCall(const ControlTarget& target, ControlKind kind,
                                   std::string_view reason, std::chrono::milliseconds timeout);

}  // namespace lockstep::protocol
