#include "protocol/control_client.h"

#include <poll.h>

#include "common/clock.h"
#include "common/net.h"
#include "protocol/auth.h"
#include "protocol/control.h"
#include "protocol/frame.h"

namespace lockstep::protocol {
namespace {

using Steady = std::chrono::steady_clock;

// The next frame from `fd`, waiting until `deadline`.
StatusOr<Frame> NextFrame(int fd, FrameDecoder& decoder, Steady::time_point deadline) {
  for (;;) {
    LS_ASSIGN_OR_RETURN(std::optional<Frame> frame, decoder.Next());
    if (frame) return std::move(*frame);
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, net::MillisUntil(deadline));
    if (ready == 0) return DeadlineExceededError("control: no answer from the rendezvous server");
    if (ready < 0) return UnavailableError("control: poll failed");
    std::string bytes;
    LS_ASSIGN_OR_RETURN(net::ReadResult r, net::ReadAvailable(fd, &bytes, 1u << 16));
    decoder.Append(bytes);
    if (r.eof && r.bytes == 0) {
      return UnavailableError("control: the rendezvous server closed the connection");
    }
  }
}

}  // namespace

StatusOr<ControlReply> ParseControlAnswer(const Frame& answer) {
  ControlReply reply;
  switch (static_cast<MessageType>(answer.type)) {
    case MessageType::kRefuse: {
      LS_ASSIGN_OR_RETURN(Refuse refuse, Decode<Refuse>(answer.body));
      return PermissionDeniedError("control request refused: " + refuse.reason);
    }
    case MessageType::kControlStatus: {
      LS_ASSIGN_OR_RETURN(reply.status, Decode<ControlStatus>(answer.body));
      return reply;
    }
    case MessageType::kControlAck: {
      LS_ASSIGN_OR_RETURN(reply.ack, Decode<ControlAck>(answer.body));
      return reply;
    }
    default:
      return DataLossError("control: unexpected answer type " + std::to_string(answer.type));
  }
}

StatusOr<ControlReply> ControlCall(const ControlTarget& target, ControlKind kind,
                                   std::string_view reason, std::chrono::milliseconds timeout) {
  // Real time: the deadline bounds poll(2) waits (net::MillisUntil).
  const Steady::time_point deadline = RealClock::Get().Now() + timeout;
  LS_ASSIGN_OR_RETURN(UniqueFd fd,
                      net::ConnectTcp(net::HostPort{target.host, target.port}, deadline));
  FrameDecoder decoder;
  LS_ASSIGN_OR_RETURN(Frame first, NextFrame(fd.get(), decoder, deadline));
  if (first.type != static_cast<uint8_t>(MessageType::kChallenge)) {
    return DataLossError("control: expected a challenge");
  }
  LS_ASSIGN_OR_RETURN(Challenge challenge, Decode<Challenge>(first.body));
  ControlRequest request;
  request.run_id = target.run_id;
  request.kind = kind;
  request.reason = std::string(reason.substr(0, kMaxStringBytes));
  request.mac = ControlMac(AttemptKey(target.token, target.attempt), challenge.nonce,
                           request.run_id, kind, request.reason);
  LS_RETURN_IF_ERROR(net::WriteAll(fd.get(), Encode(request), deadline).WithContext("control"));
  LS_ASSIGN_OR_RETURN(Frame answer, NextFrame(fd.get(), decoder, deadline));
  return ParseControlAnswer(answer);
}

}  // namespace lockstep::protocol
