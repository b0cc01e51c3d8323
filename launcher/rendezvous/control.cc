#include "launcher/rendezvous/control.h"

#include <poll.h>


#include "launcher/rendezvous/auth.h"
#include "launcher/rendezvous/frame.h"
#include "launcher/rendezvous/wire.h"
#include "launcher/sys/socket.h"

namespace lockstep::launcher::rendezvous {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Domain separation: a join's MAC input starts with the 32-byte nonce's length, this one with
// the label's (16), so no control MAC can stand in for a join MAC or the reverse.
constexpr std::string_view kControlLabel = "lockstep-control";

std::string Framed(MessageType type, const WireWriter& w) {
  return EncodeFrame(static_cast<uint8_t>(type), w.data());
}

// The next frame from `fd`, waiting until `deadline`.
StatusOr<Frame> NextFrame(int fd, FrameDecoder& decoder, Steady::time_point deadline) {
  for (;;) {
    LS_ASSIGN_OR_RETURN(std::optional<Frame> frame, decoder.Next());
    if (frame) return std::move(*frame);
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, sys::MillisUntil(deadline));
    if (ready == 0) return DeadlineExceededError("control: no answer from the rendezvous server");
    if (ready < 0) return UnavailableError("control: poll failed");
    std::string bytes;
    LS_ASSIGN_OR_RETURN(sys::ReadResult r, sys::ReadAvailable(fd, &bytes, 1u << 16));
    decoder.Append(bytes);
    if (r.eof && r.bytes == 0) {
      return UnavailableError("control: the rendezvous server closed the connection");
    }
  }
}

}  // namespace

std::string Encode(const ControlRequest& m) {
  WireWriter w;
  w.PutU32(m.version);
  w.PutString(m.run_id);
  w.PutU8(static_cast<uint8_t>(m.kind));
  w.PutString(m.reason);
  w.PutString(m.mac);
  return Framed(MessageType::kControl, w);
}

std::string Encode(const ControlStatus& m) {
  WireWriter w;
  w.PutU32(m.round);
  w.PutU8(m.complete ? 1 : 0);
  w.PutU8(m.running ? 1 : 0);
  w.PutU32(m.members);
  w.PutU32(m.failure_restarts);
  w.PutU32(m.requested_restarts);
  w.PutU8(m.last_failure ? 1 : 0);
  if (m.last_failure) {
    const RoundFailure& f = *m.last_failure;
    w.PutU32(f.round);
    w.PutI32(f.node_rank);
    w.PutI32(f.rank);
    w.PutI32(f.local_rank);
    w.PutI32(f.exit_code);
    w.PutI32(f.signal);
    w.PutString(f.reason);
    w.PutString(std::string_view(f.message).substr(0, kMaxStringBytes));
    PutStderrTail(w, f.stderr_tail);
  }
  return Framed(MessageType::kControlStatus, w);
}

std::string Encode(const ControlAck& m) {
  WireWriter w;
  w.PutU8(m.accepted ? 1 : 0);
  w.PutU32(m.round);
  w.PutString(m.message);
  return Framed(MessageType::kControlAck, w);
}

StatusOr<ControlRequest> DecodeControlRequest(std::string_view body) {
  WireReader r(body);
  ControlRequest m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.version));
  LS_RETURN_IF_ERROR(r.GetString(&m.run_id));
  uint8_t kind = 0;
  LS_RETURN_IF_ERROR(r.GetU8(&kind));
  if (kind != static_cast<uint8_t>(ControlKind::kStatus) &&
      kind != static_cast<uint8_t>(ControlKind::kRestart)) {
    return DataLossError("control: unknown kind " + std::to_string(kind));
  }
  m.kind = static_cast<ControlKind>(kind);
  LS_RETURN_IF_ERROR(r.GetString(&m.reason));
  LS_RETURN_IF_ERROR(r.GetString(&m.mac, kMacBytes));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<ControlStatus> DecodeControlStatus(std::string_view body) {
  WireReader r(body);
  ControlStatus m;
  uint8_t complete = 0, running = 0, has_failure = 0;
  LS_RETURN_IF_ERROR(r.GetU32(&m.round));
  LS_RETURN_IF_ERROR(r.GetU8(&complete));
  LS_RETURN_IF_ERROR(r.GetU8(&running));
  LS_RETURN_IF_ERROR(r.GetU32(&m.members));
  LS_RETURN_IF_ERROR(r.GetU32(&m.failure_restarts));
  LS_RETURN_IF_ERROR(r.GetU32(&m.requested_restarts));
  LS_RETURN_IF_ERROR(r.GetU8(&has_failure));
  m.complete = complete != 0;
  m.running = running != 0;
  if (has_failure != 0) {
    RoundFailure f;
    LS_RETURN_IF_ERROR(r.GetU32(&f.round));
    LS_RETURN_IF_ERROR(r.GetI32(&f.node_rank));
    LS_RETURN_IF_ERROR(r.GetI32(&f.rank));
    LS_RETURN_IF_ERROR(r.GetI32(&f.local_rank));
    LS_RETURN_IF_ERROR(r.GetI32(&f.exit_code));
    LS_RETURN_IF_ERROR(r.GetI32(&f.signal));
    LS_RETURN_IF_ERROR(r.GetString(&f.reason));
    LS_RETURN_IF_ERROR(r.GetString(&f.message));
    LS_RETURN_IF_ERROR(GetStderrTail(r, &f.stderr_tail).WithContext("control"));
    m.last_failure = std::move(f);
  }
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<ControlAck> DecodeControlAck(std::string_view body) {
  WireReader r(body);
  ControlAck m;
  uint8_t accepted = 0;
  LS_RETURN_IF_ERROR(r.GetU8(&accepted));
  m.accepted = accepted != 0;
  LS_RETURN_IF_ERROR(r.GetU32(&m.round));
  LS_RETURN_IF_ERROR(r.GetString(&m.message));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

std::string ControlMac(std::string_view token, std::string_view nonce, std::string_view run_id,
                       ControlKind kind, std::string_view reason) {
  WireWriter input;
  input.PutString(kControlLabel);
  input.PutString(nonce);
  input.PutString(run_id);
  input.PutU8(static_cast<uint8_t>(kind));
  input.PutString(reason);
  return HmacSha256(token, input.data());
}

StatusOr<ControlReply> ControlCall(const ControlTarget& target, ControlKind kind,
                                   std::string_view reason, milliseconds timeout) {
  const Steady::time_point deadline = Steady::now() + timeout;
  LS_ASSIGN_OR_RETURN(sys::UniqueFd fd,
                      sys::ConnectTcp(sys::HostPort{target.host, target.port}, deadline));
  FrameDecoder decoder;
  LS_ASSIGN_OR_RETURN(Frame first, NextFrame(fd.get(), decoder, deadline));
  if (first.type != static_cast<uint8_t>(MessageType::kChallenge)) {
    return DataLossError("control: expected a challenge");
  }
  LS_ASSIGN_OR_RETURN(Challenge challenge, DecodeChallenge(first.body));
  ControlRequest request;
  request.run_id = target.run_id;
  request.kind = kind;
  request.reason = std::string(reason.substr(0, kMaxStringBytes));
  request.mac = ControlMac(target.token, challenge.nonce, request.run_id, kind, request.reason);
  LS_RETURN_IF_ERROR(sys::WriteAll(fd.get(), Encode(request), deadline).WithContext("control"));
  LS_ASSIGN_OR_RETURN(Frame answer, NextFrame(fd.get(), decoder, deadline));
  ControlReply reply;
  switch (static_cast<MessageType>(answer.type)) {
    case MessageType::kRefuse: {
      LS_ASSIGN_OR_RETURN(Refuse refuse, DecodeRefuse(answer.body));
      return PermissionDeniedError("control request refused: " + refuse.reason);
    }
    case MessageType::kControlStatus: {
      LS_ASSIGN_OR_RETURN(ControlStatus status, DecodeControlStatus(answer.body));
      reply.status = std::move(status);
      break;
    }
    case MessageType::kControlAck: {
      LS_ASSIGN_OR_RETURN(ControlAck ack, DecodeControlAck(answer.body));
      reply.ack = std::move(ack);
      break;
    }
    default:
      return DataLossError("control: unexpected answer type " + std::to_string(answer.type));
  }
  return reply;
}

}  // namespace lockstep::launcher::rendezvous
