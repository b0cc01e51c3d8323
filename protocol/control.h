#pragma once
// Control requests on the rendezvous server: how the operator asks node 0's launcher what the
// gang is doing (Status) and makes it restart the gang in place (Restart). The messages
// (ControlRequest, ControlStatus, ControlAck) are in messages.h with the others; the one-request
// client is control_client.h.
//
// A control session: the server sends Challenge on accept (as for a join); the client answers
// Control{version, run_id, kind, reason, mac} with
//   mac = HMAC-SHA256(token, "lockstep-control" | nonce | run_id | kind | reason)
// (length-prefixed fields; the label keeps a control MAC from ever equalling a join MAC); the
// server answers ControlStatus or ControlAck, or Refuse (bad MAC, other run, bad version), and
// closes. A control session is never a member: refusing it, or its close, leaves the round alone.

#include <string>
#include <string_view>

#include "protocol/messages.h"

namespace lockstep::protocol {

std::string ControlMac(std::string_view token, std::string_view nonce, std::string_view run_id,
                       ControlKind kind, std::string_view reason);

}  // namespace lockstep::protocol
