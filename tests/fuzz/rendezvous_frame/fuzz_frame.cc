// Fuzz target for the rendezvous framing decoder and message codecs (protocol/).
// The input is split into chunks at arbitrary points (driven by its first byte) so partial-frame
// handling is exercised; every complete frame is decoded as the message its type names. The only
// acceptable outcomes are frames or error values: no crash, no leak, no unbounded buffering.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/check.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::protocol;
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  // A small limit too, so the oversize path is reachable with short inputs.
  FrameDecoder decoders[2] = {FrameDecoder(), FrameDecoder(64)};
  for (FrameDecoder& decoder : decoders) {
    for (size_t pos = 0; pos < input.size(); pos += chunk) {
      decoder.Append(input.substr(pos, chunk));
      for (;;) {
        auto frame = decoder.Next();
        if (!frame.ok() || !frame->has_value()) break;
        LS_CHECK((*frame)->body.size() < kMaxFrameBytes);
        (void)DecodeAny(**frame).ok();
      }
      LS_CHECK(decoder.buffered() <= input.size());
    }
  }
  return 0;
}
