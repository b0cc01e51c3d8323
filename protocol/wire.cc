#include "protocol/wire.h"

#include <algorithm>

namespace lockstep::protocol {

void WireWriter::U32(uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) U8(static_cast<uint8_t>(v >> shift));
}

void WireWriter::U64(uint64_t v) {
  U32(static_cast<uint32_t>(v >> 32));
  U32(static_cast<uint32_t>(v));
}

void WireWriter::String(std::string_view s, uint32_t max_bytes) {
  s = s.substr(0, max_bytes);
  U32(static_cast<uint32_t>(s.size()));
  out_.append(s);
}

void WireWriter::Tail(const std::vector<std::string>& lines) {
  const size_t n = std::min<size_t>(lines.size(), kMaxTailLines);
  U32(static_cast<uint32_t>(n));
  for (size_t i = lines.size() - n; i < lines.size(); ++i) {
    String(lines[i], static_cast<uint32_t>(kMaxTailLineBytes));
  }
}

void WireReader::Fail(std::string message) {
  if (status_.ok()) status_ = DataLossError(std::move(message));
}

bool WireReader::Need(size_t n) {
  if (!status_.ok()) return false;
  if (remaining() < n) {
    Fail("message truncated: need " + std::to_string(n) + " bytes, have " +
         std::to_string(remaining()));
    return false;
  }
  return true;
}

void WireReader::U8(uint8_t& v) {
  if (!Need(1)) return;
  v = static_cast<uint8_t>(in_[pos_++]);
}

void WireReader::U32(uint32_t& v) {
  if (!Need(4)) return;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r = (r << 8) | static_cast<uint8_t>(in_[pos_++]);
  v = r;
}

void WireReader::U64(uint64_t& v) {
  uint32_t hi = 0, lo = 0;
  U32(hi);
  U32(lo);
  if (status_.ok()) v = (static_cast<uint64_t>(hi) << 32) | lo;
}

void WireReader::I32(int32_t& v) {
  uint32_t u = 0;
  U32(u);
  if (status_.ok()) v = static_cast<int32_t>(u);
}

void WireReader::Bool(bool& v) {
  uint8_t raw = 0;
  U8(raw);
  if (!status_.ok()) return;
  if (raw > 1) return Fail("flag byte " + std::to_string(raw) + " is not 0 or 1");
  v = raw == 1;
}

void WireReader::String(std::string& s, uint32_t max_bytes) {
  uint32_t n = 0;
  U32(n);
  if (!status_.ok()) return;
  if (n > max_bytes) {
    return Fail("string field of " + std::to_string(n) + " bytes exceeds limit " +
                std::to_string(max_bytes));
  }
  if (!Need(n)) return;
  s.assign(in_.substr(pos_, n));
  pos_ += n;
}

void WireReader::Fixed(std::string& s, size_t n) {
  String(s, static_cast<uint32_t>(n));
  if (status_.ok() && s.size() != n) Fail("field must be " + std::to_string(n) + " bytes");
}

void WireReader::Reason(FailureReason& r) {
  std::string name;
  String(name);
  if (status_.ok()) r = ParseFailureReason(name);
}

void WireReader::Tail(std::vector<std::string>& lines) {
  List(lines, kMaxTailLines, 4, [](WireReader& r, std::string& line) {
    r.String(line, static_cast<uint32_t>(kMaxTailLineBytes));
  });
}

Status WireReader::Finish() const {
  if (!status_.ok()) return status_;
  if (remaining() != 0) {
    return DataLossError(std::to_string(remaining()) + " unexpected trailing bytes");
  }
  return Status::Ok();
}

}  // namespace lockstep::protocol
