#include "protocol/control_client.h"

#include <poll.h>

#include <algorithm>

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

Status CheckControlBounds(const ControlStatus& status, const ControlBounds& bounds) {
  const uint64_t nodes = bounds.node_ranks;
  const uint64_t spare_pods = nodes + bounds.spares;
  const auto beyond = [&](const std::string& what, int64_t value, uint64_t limit) {
    return OutOfRangeError("launcher answer beyond the job's size (" + std::to_string(nodes) +
                           " node ranks, " + std::to_string(bounds.spares) + " spares): " + what +
                           " " + std::to_string(value) + ", the job allows " +
                           std::to_string(limit));
  };
  if (status.members > nodes) return beyond("members", status.members, nodes);
  if (status.lost.size() > nodes) {
    return beyond("lost members", static_cast<int64_t>(status.lost.size()), nodes);
  }
  if (status.serving.size() > nodes) {
    return beyond("served node ranks", static_cast<int64_t>(status.serving.size()), nodes);
  }
  if (status.standby_spares > spare_pods) {
    return beyond("standby spares", status.standby_spares, spare_pods);
  }
  // Limits below are "ranks below N"; the message says how many there are.
  if (status.last_failure) {
    const int32_t r = status.last_failure->node_rank;
    if (r < -1 || (r >= 0 && static_cast<uint64_t>(r) >= nodes)) {
      return beyond("last failure's node rank", r, nodes);
    }
  }
  for (const LostMember& l : status.lost) {
    if (l.node_rank >= nodes) return beyond("lost node rank", l.node_rank, nodes);
  }
  for (const SpareServing& s : status.serving) {
    if (s.node_rank >= nodes) return beyond("served node rank", s.node_rank, nodes);
    if (s.spare_index >= spare_pods) return beyond("spare index", s.spare_index, spare_pods);
  }
  return Status::Ok();
}

size_t MaxControlAnswerFrameBytes(const ControlBounds& bounds) {
  // The type byte, then ControlStatus::Fields in order: round, complete, running, members, the
  // two restart counts; the optional last failure and progress (a flag byte each); promotions,
  // standby spares; the two lists (a count each), one entry per node-rank at most; the running
  // round's start (version 9).
  constexpr size_t kFixed = 1 + 4 + 1 + 1 + 4 + 4 + 4 + (1 + RoundFailure::kMaxBytes) +
                            (1 + TrainingProgress::kBytes) + 4 + 4 + 4 + 4 + 8;
  constexpr size_t kPerNode = SpareServing::kMaxBytes + LostMember::kMaxBytes;
  const size_t nodes = std::min<size_t>(bounds.node_ranks, kMaxPeers);
  return std::min(kMaxFrameBytes, kFixed + nodes * kPerNode);
}

StatusOr<ControlReply> ParseControlAnswer(const Frame& answer,
                                          const std::optional<ControlBounds>& bounds) {
  ControlReply reply;
  switch (static_cast<MessageType>(answer.type)) {
    case MessageType::kRefuse: {
      LS_ASSIGN_OR_RETURN(Refuse refuse, Decode<Refuse>(answer.body));
      return PermissionDeniedError("control request refused: " + refuse.reason);
    }
    case MessageType::kControlStatus: {
      LS_ASSIGN_OR_RETURN(reply.status, Decode<ControlStatus>(answer.body));
      if (bounds) LS_RETURN_IF_ERROR(CheckControlBounds(*reply.status, *bounds));
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
  // A job's worker-0 is never read beyond what a job of its size can be sent (the challenge
  // and every other answer are shorter than any ControlStatus limit).
  FrameDecoder decoder(target.bounds ? MaxControlAnswerFrameBytes(*target.bounds)
                                     : kMaxFrameBytes);
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
  StatusOr<Frame> answer = NextFrame(fd.get(), decoder, deadline);
  if (!answer.ok() && target.bounds &&
      answer.status().message().find("exceeds limit") != std::string::npos) {
    return OutOfRangeError("launcher answer beyond the job's size: " +
                           answer.status().message());
  }
  if (!answer.ok()) return answer.status();
  return ParseControlAnswer(*answer, target.bounds);
}

}  // namespace lockstep::protocol
