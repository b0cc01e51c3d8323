#include "protocol/control.h"

#include "protocol/auth.h"
#include "protocol/wire.h"

namespace lockstep::protocol {
namespace {

// Domain separation: a join's MAC input starts with the 32-byte nonce's length, this one with
// the label's (16), so no control MAC can stand in for a join MAC or the reverse.
constexpr std::string_view kControlLabel = "lockstep-control";

}  // namespace

std::string ControlMac(std::string_view key, std::string_view nonce, std::string_view run_id,
                       ControlKind kind, std::string_view reason) {
  WireWriter input;
  input.String(kControlLabel);
  input.String(nonce);
  input.String(run_id);
  input.U8(static_cast<uint8_t>(kind));
  input.String(reason);
  return HmacSha256(key, input.data());
}

}  // namespace lockstep::protocol
