#pragma once
// Length-prefixed framing of the rendezvous stream: [u32 big-endian length][u8 type][body], where
// length counts the type byte and the body. Pure and fuzzed (tests/fuzz/rendezvous_frame/). The
// decoder rejects a bad length as soon as the 4-byte header arrives, so a hostile peer cannot make
// it buffer more than one maximal frame.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::protocol {

// A peer table of 8,192 pods with long DNS names fits comfortably.
inline constexpr size_t kMaxFrameBytes = 4u << 20;
inline constexpr size_t kFrameHeaderBytes = 4;

struct Frame {
  uint8_t type = 0;
  std::string body;
};

// Appends the encoded frame to `out` (so many frames can share one buffer).
void AppendFrame(uint8_t type, std::string_view body, std::string* out);
std::string EncodeFrame(uint8_t type, std::string_view body);

// Incremental decoder for one stream. Not thread-safe. After an error the stream is corrupt and
// every later call returns the same error.
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kMaxFrameBytes) : max_(max_frame_bytes) {}

  // A new limit for frames not yet begun (the rendezvous server raises it once a peer has
  // authenticated).
  void set_max_frame_bytes(size_t max_frame_bytes) { max_ = max_frame_bytes; }

  void Append(std::string_view bytes);
  // The next complete frame; std::nullopt when more bytes are needed.
  StatusOr<std::optional<Frame>> Next();
  // Bytes received but not yet returned as frames.
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;
  Status error_;
};

}  // namespace lockstep::protocol
