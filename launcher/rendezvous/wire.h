#pragma once
// Bounded big-endian readers and writers for rendezvous message bodies. Pure; every read is
// bounds-checked so a hostile body can only produce an error, never an out-of-range access.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::launcher::rendezvous {

// Longest string field any message carries (host names, ids, reasons, stderr lines).
inline constexpr uint32_t kMaxStringBytes = 8192;

class WireWriter {
 public:
  void PutU8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void PutU32(uint32_t v);
  void PutI32(int32_t v) { PutU32(static_cast<uint32_t>(v)); }
  void PutU64(uint64_t v);
  // Length-prefixed; callers keep strings under kMaxStringBytes (readers reject longer ones).
  void PutString(std::string_view s);
  // Raw bytes, no length (fixed-size fields and pre-encoded blobs).
  void PutRaw(std::string_view s) { out_.append(s); }
  std::string Take() { return std::move(out_); }
  const std::string& data() const { return out_; }

 private:
  std::string out_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  Status GetU8(uint8_t* v);
  Status GetU32(uint32_t* v);
  Status GetI32(int32_t* v);
  Status GetU64(uint64_t* v);
  Status GetString(std::string* s, uint32_t max_bytes = kMaxStringBytes);
  Status GetRaw(size_t n, std::string* s);
  size_t remaining() const { return in_.size() - pos_; }
  // Error unless every byte was consumed: trailing garbage is a protocol violation.
  Status ExpectEnd() const;

 private:
  Status Need(size_t n) const;
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace lockstep::launcher::rendezvous
