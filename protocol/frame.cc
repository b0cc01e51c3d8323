#include "protocol/frame.h"

namespace lockstep::protocol {

void AppendFrame(uint8_t type, std::string_view body, std::string* out) {
  const uint32_t len = static_cast<uint32_t>(body.size() + 1);
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(len >> shift));
  out->push_back(static_cast<char>(type));
  out->append(body);
}

std::string EncodeFrame(uint8_t type, std::string_view body) {
  std::string out;
  out.reserve(kFrameHeaderBytes + 1 + body.size());
  AppendFrame(type, body, &out);
  return out;
}

void FrameDecoder::Append(std::string_view bytes) {
  // Compact lazily: drop consumed bytes only when they dominate the buffer.
  if (pos_ > 0 && pos_ * 2 >= buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

StatusOr<std::optional<Frame>> FrameDecoder::Next() {
  if (!error_.ok()) return error_;
  if (buffered() < kFrameHeaderBytes) return std::optional<Frame>();
  uint32_t len = 0;
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) {
    len = (len << 8) | static_cast<uint8_t>(buf_[pos_ + i]);
  }
  if (len == 0) {
    error_ = DataLossError("frame without a type byte");
    return error_;
  }
  if (len > max_) {
    error_ = DataLossError("frame of " + std::to_string(len) + " bytes exceeds limit " +
                           std::to_string(max_));
    return error_;
  }
  if (buffered() < kFrameHeaderBytes + len) return std::optional<Frame>();
  Frame frame;
  frame.type = static_cast<uint8_t>(buf_[pos_ + kFrameHeaderBytes]);
  frame.body.assign(buf_, pos_ + kFrameHeaderBytes + 1, len - 1);
  pos_ += kFrameHeaderBytes + len;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(frame));
}

}  // namespace lockstep::protocol
