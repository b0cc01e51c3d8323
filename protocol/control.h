#pragma once
// Control requests on the rendezvous server: how the operator asks node 0's launcher what the
// gang is doing (Status) and makes it restart the gang in place (Restart). The messages
// (ControlRequest, ControlStatus, ControlAck) are in messages.h with the others; the one-request
// client is control_client.h.
//
// A control session: the server sends Challenge on accept (as for a join); the client answers
// Control{version, run_id, kind, reason, mac} with
//   mac = HMAC-SHA256(AttemptKey(token, attempt), "lockstep-control" | nonce | run_id | kind |
//                     reason)
// (length-prefixed fields; the label keeps a control MAC from ever equalling a join MAC); the
// server answers ControlStatus or ControlAck, or Refuse (bad MAC, other run, bad version), and
// closes. A control session is never a member: refusing it, or its close, leaves the round alone.
//
// The key is the attempt's (auth.h), as for a join, since protocol version 7: `attempt` is the
// one the operator created the worker-0 pod for, and the server checks with its own pod's. A
// launcher of an earlier attempt still listening at an address the next attempt's worker-0 got
// (a pod IP handed out again) refuses the operator instead of answering with its own rounds and
// restarts, which the operator took for the new attempt's (CI, 2026-12-04: an in-place restart
// recorded on a gang that had just been recreated).

#include <string>
#include <string_view>

#include "protocol/messages.h"

namespace lockstep::protocol {

// `key`: AttemptKey(token, attempt) of the worker-0 pod's attempt.
std::string ControlMac(std::string_view key, std::string_view nonce, std::string_view run_id,
                       ControlKind kind, std::string_view reason);

}  // namespace lockstep::protocol
