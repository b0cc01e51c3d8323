#pragma once
// The two directions of a message body. A message describes its body once, as a list of fields
// in wire order (messages.h, `Fields`), and that one description runs with a WireWriter to encode
// and with a WireReader to decode, so the two can never disagree. Integers are big-endian,
// strings are a u32 length then the bytes, booleans one byte (0 or 1), lists a u32 count then
// the elements, optionals a flag byte then the value. Pure.
//
// Every read is bounds-checked, so a hostile body can only produce an error, never an
// out-of-range access or a large allocation. The reader keeps the first error and ignores the
// fields after it; Finish() reports it, or trailing bytes, which are a protocol violation too.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "protocol/failure_reason.h"

namespace lockstep::protocol {

// Longest string field any message carries (host names, ids, reasons, stderr lines).
inline constexpr uint32_t kMaxStringBytes = 8192;
// A failing child's stderr tail on the wire (Failure, RoundFailure): the last kMaxTailLines
// lines, each cut to kMaxTailLineBytes.
inline constexpr uint32_t kMaxTailLines = 20;
inline constexpr size_t kMaxTailLineBytes = 512;

class WireWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v);
  void U64(uint64_t v);
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Bool(bool v) { U8(v ? 1 : 0); }
  // Length-prefixed, cut to `max_bytes` (what a reader accepts).
  void String(std::string_view s, uint32_t max_bytes = kMaxStringBytes);
  // A string the reader requires to be exactly `n` bytes (nonces, MACs).
  void Fixed(std::string_view s, size_t /*n*/) { String(s); }
  void Reason(FailureReason r) { String(ToString(r)); }
  // The last kMaxTailLines lines, each cut to kMaxTailLineBytes.
  void Tail(const std::vector<std::string>& lines);
  // An enum stored in one byte; [min, max] is the reader's accepted range.
  template <typename E>
  void Enum(E v, E /*min*/, E /*max*/, std::string_view /*what*/) {
    U8(static_cast<uint8_t>(v));
  }
  // A u32 count, then `each(*this, element)` per element.
  template <typename T, typename F>
  void List(const std::vector<T>& items, uint32_t /*max_count*/, size_t /*min_element_bytes*/,
            F each) {
    U32(static_cast<uint32_t>(items.size()));
    for (const T& item : items) each(*this, item);
  }
  // A flag byte, then `each(*this, value)` when present.
  template <typename T, typename F>
  void Optional(const std::optional<T>& value, F each) {
    Bool(value.has_value());
    if (value) each(*this, *value);
  }

  const std::string& data() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  void U8(uint8_t& v);
  void U32(uint32_t& v);
  void U64(uint64_t& v);
  void I32(int32_t& v);
  void Bool(bool& v);
  void String(std::string& s, uint32_t max_bytes = kMaxStringBytes);
  void Fixed(std::string& s, size_t n);
  void Reason(FailureReason& r);
  void Tail(std::vector<std::string>& lines);
  template <typename E>
  void Enum(E& v, E min, E max, std::string_view what) {
    uint8_t raw = 0;
    U8(raw);
    if (!status_.ok()) return;
    if (raw < static_cast<uint8_t>(min) || raw > static_cast<uint8_t>(max)) {
      Fail(std::string(what) + ": unknown value " + std::to_string(raw));
      return;
    }
    v = static_cast<E>(raw);
  }
  template <typename T, typename F>
  void List(std::vector<T>& items, uint32_t max_count, size_t min_element_bytes, F each) {
    uint32_t n = 0;
    U32(n);
    if (!status_.ok()) return;
    if (n > max_count) return Fail("list of " + std::to_string(n) + " exceeds limit");
    // Each element takes at least `min_element_bytes`, so a lying count cannot make us
    // reserve much.
    if (n > remaining() / min_element_bytes) return Fail("list count exceeds body");
    items.resize(n);
    for (T& item : items) {
      if (!status_.ok()) return;
      each(*this, item);
    }
  }
  template <typename T, typename F>
  void Optional(std::optional<T>& value, F each) {
    bool present = false;
    Bool(present);
    if (!status_.ok() || !present) return;
    value.emplace();
    each(*this, *value);
  }

  size_t remaining() const { return in_.size() - pos_; }
  const Status& status() const { return status_; }
  // The first error, else an error unless every byte was consumed: trailing bytes are a
  // protocol violation.
  Status Finish() const;

 private:
  bool Need(size_t n);
  void Fail(std::string message);

  std::string_view in_;
  size_t pos_ = 0;
  Status status_;
};

}  // namespace lockstep::protocol
