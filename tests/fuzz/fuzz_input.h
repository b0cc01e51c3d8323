#pragma once
// FuzzInput: reads a fuzz target's input as a few control bytes and then data, like clang's
// FuzzedDataProvider (which GCC builds of the replay tests lack). Bytes past the end read as 0
// and empty strings, so a target never has to check the size before it decodes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lockstep::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  uint8_t Byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }

  // Up to `n` bytes from the front.
  std::string_view Bytes(size_t n) {
    std::string_view out = rest_.substr(0, std::min(n, rest_.size()));
    rest_.remove_prefix(out.size());
    return out;
  }

  // Everything not read yet.
  std::string_view Rest() {
    std::string_view out = rest_;
    rest_ = {};
    return out;
  }

  bool empty() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// Calls `fn(chunk)` for consecutive pieces of `data` of `chunk` bytes (the last may be shorter),
// so a stream decoder sees its input split at arbitrary points, as a socket delivers it.
template <typename Fn>
void ForEachChunk(std::string_view data, size_t chunk, Fn&& fn) {
  chunk = std::max<size_t>(chunk, 1);
  for (size_t pos = 0; pos < data.size(); pos += chunk) {
    if (!fn(data.substr(pos, chunk))) return;
  }
}

// Calls `fn(control, bytes)` for each record [control byte][length byte][length bytes] of the
// rest of `in`: the stream targets' way of saying which connection gets which bytes.
template <typename Fn>
void ForEachRecord(FuzzInput& in, Fn&& fn) {
  while (!in.empty()) {
    const uint8_t control = in.Byte();
    const std::string_view bytes = in.Bytes(in.Byte());
    fn(control, bytes);
  }
}

// The whole of a stream target's entry point: a fresh Harness fed every record of the input,
// `fn(harness, control, bytes)` deciding which connection gets which bytes.
template <typename Harness, typename Fn>
int FeedRecords(const uint8_t* data, size_t size, Fn&& fn) {
  FuzzInput in(data, size);
  Harness harness;
  ForEachRecord(in, [&](uint8_t control, std::string_view bytes) { fn(harness, control, bytes); });
  return 0;
}

}  // namespace lockstep::fuzz
