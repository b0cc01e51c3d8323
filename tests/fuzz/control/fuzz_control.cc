// Fuzz target for the control messages (protocol/control.h): what the operator's control client
// reads back from node 0's rendezvous server (ParseControlAnswer), and what that server reads from
// a control client. Both come from peers on the pod network. The input after its first byte is a
// stream cut into chunks of 1 + first byte % 64 bytes and into frames; each frame is checked
// beyond "no crash":
//   - as the server's answer: an error, or a reply holding exactly what its frame type says;
//   - as each control message (and Refuse): whatever decodes re-encodes to one frame of its type
//     that decodes to an equal message (one field list serves both directions: they must agree);
//   - a decoded request gets its MAC computed as the server computes it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.h"
#include "protocol/control.h"
#include "protocol/control_client.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "tests/fuzz/fuzz_input.h"

namespace lockstep::protocol {
namespace {

template <typename M>
void CheckRoundTrip(const Frame& frame) {
  StatusOr<M> m = Decode<M>(frame.body);
  if (!m.ok()) return;
  FrameDecoder decoder;
  decoder.Append(Encode(*m));
  StatusOr<std::optional<Frame>> again = decoder.Next();
  LS_CHECK(again.ok() && again->has_value());
  LS_CHECK((*again)->type == static_cast<uint8_t>(M::kType));
  LS_CHECK(decoder.buffered() == 0);
  StatusOr<M> back = Decode<M>((*again)->body);
  LS_CHECK(back.ok());
  LS_CHECK(*back == *m);
}

void CheckFrame(const Frame& frame) {
  StatusOr<ControlReply> reply = ParseControlAnswer(frame);
  if (reply.ok()) {
    LS_CHECK(reply->status.has_value() ==
             (frame.type == static_cast<uint8_t>(MessageType::kControlStatus)));
    LS_CHECK(reply->ack.has_value() ==
             (frame.type == static_cast<uint8_t>(MessageType::kControlAck)));
  }
  CheckRoundTrip<ControlRequest>(frame);
  CheckRoundTrip<ControlStatus>(frame);
  CheckRoundTrip<ControlAck>(frame);
  CheckRoundTrip<Refuse>(frame);
  if (StatusOr<ControlRequest> request = Decode<ControlRequest>(frame.body); request.ok()) {
    LS_CHECK(ControlMac("token", std::string(kNonceBytes, 'n'), request->run_id, request->kind,
                        request->reason)
                 .size() == kMacBytes);
  }
}

}  // namespace
}  // namespace lockstep::protocol

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::protocol;
  lockstep::fuzz::FuzzInput in(data, size);
  const size_t chunk = 1 + in.Byte() % 64;
  FrameDecoder decoder;
  lockstep::fuzz::ForEachChunk(in.Rest(), chunk, [&](std::string_view piece) {
    decoder.Append(piece);
    for (;;) {
      lockstep::StatusOr<std::optional<Frame>> frame = decoder.Next();
      if (!frame.ok()) return false;
      if (!frame->has_value()) return true;
      CheckFrame(**frame);
    }
  });
  return 0;
}
