// Fuzz target for the termination message (protocol/termination.h): the JSON the launcher leaves
// in /dev/termination-log, which the operator reads back from a pod's status. Whatever runs in the
// trainer container can write anything there. Every input is used both ways, checked beyond "no
// crash":
//   - read as the operator reads it: a document is the launcher's only if it is an object with
//     stderrTail; an integer key within int's range reads as its value (restart counts at least
//     0, at most kMaxCounter), and one beyond it keeps its default instead of wrapping (an exitCode of 2^32 + 3 must
//     not match a FailJob rule for 3); the message it decoded re-encodes within
//     kMaxTerminationBytes to a document that decodes to the same numbers;
//   - as what a launcher may hold (numbers from the input, then a message and stderr lines of
//     any bytes, as a child writes them): it encodes within kMaxTerminationBytes to a document
//     the operator reads back as the launcher's, with the same numbers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "protocol/termination.h"
#include "tests/fuzz/fuzz_input.h"

namespace lockstep::protocol {
namespace {

using nlohmann::json;

void CheckSameNumbers(const TerminationMessage& a, const TerminationMessage& b) {
  LS_CHECK(a.version == b.version && a.reason == b.reason && a.attempt == b.attempt);
  LS_CHECK(a.restart_count == b.restart_count && a.requested_restarts == b.requested_restarts);
  LS_CHECK(a.node_rank == b.node_rank && a.rank == b.rank);
  LS_CHECK(a.exit_code == b.exit_code && a.signal == b.signal);
  LS_CHECK(a.progress == b.progress);
}

// The value an integer key must read as: its own within int's range, else `fallback`.
int Expected(const json& doc, const char* key, int fallback) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_integer()) return fallback;
  if (it->is_number_unsigned()) {
    const auto v = it->get<uint64_t>();
    return v <= static_cast<uint64_t>(std::numeric_limits<int>::max()) ? static_cast<int>(v)
                                                                        : fallback;
  }
  const auto v = it->get<int64_t>();
  return v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max()
             ? static_cast<int>(v)
             : fallback;
}

// A restart count as the operator reads it: within [0, kMaxCounter] (issue 44 item 6).
int Saturated(int v) { return std::clamp(v, 0, static_cast<int>(kMaxCounter)); }

void CheckDecode(std::string_view text) {
  const std::optional<TerminationMessage> m = DecodeTermination(text);
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const bool launchers = !text.empty() && text.front() == '{' && doc.is_object() &&
                         doc.contains("stderrTail");
  LS_CHECK(m.has_value() == launchers);
  if (!m) return;
  const TerminationMessage defaults;
  LS_CHECK(m->version == Expected(doc, "version", 1));
  LS_CHECK(m->attempt == Expected(doc, "attempt", defaults.attempt));
  LS_CHECK(m->restart_count == Saturated(Expected(doc, "restartCount", 0)));
  LS_CHECK(m->requested_restarts == Saturated(Expected(doc, "requestedRestarts", 0)));
  LS_CHECK(m->node_rank == Expected(doc, "nodeRank", defaults.node_rank));
  LS_CHECK(m->rank == Expected(doc, "rank", defaults.rank));
  LS_CHECK(m->exit_code == Expected(doc, "exitCode", defaults.exit_code));
  LS_CHECK(m->signal == Expected(doc, "signal", defaults.signal));
  const std::string again = EncodeTermination(*m);
  LS_CHECK(again.size() <= kMaxTerminationBytes);
  const std::optional<TerminationMessage> back = DecodeTermination(again);
  LS_CHECK(back.has_value());
  CheckSameNumbers(*back, *m);
}

int Int(fuzz::FuzzInput& in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | in.Byte();
  int out = 0;
  std::memcpy(&out, &v, sizeof(out));
  return out;
}

void CheckEncode(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  TerminationMessage m;
  m.version = Int(in);
  m.reason =
      static_cast<FailureReason>(in.Byte() % (static_cast<int>(FailureReason::kSucceeded) + 1));
  m.attempt = Int(in);
  m.restart_count = Saturated(Int(in));  // a launcher's counts are never more
  m.requested_restarts = Saturated(Int(in));
  m.node_rank = Int(in);
  m.rank = Int(in);
  m.exit_code = Int(in);
  m.signal = Int(in);
  m.message = std::string(in.Bytes(in.Byte() * 16u));
  for (uint8_t lines = in.Byte() % 32; lines > 0 && !in.empty(); --lines) {
    m.stderr_tail.emplace_back(in.Bytes(in.Byte() * 4u));
  }
  const std::string text = EncodeTermination(m);
  LS_CHECK(text.size() <= kMaxTerminationBytes);
  const std::optional<TerminationMessage> back = DecodeTermination(text);
  LS_CHECK(back.has_value());
  CheckSameNumbers(*back, m);
  LS_CHECK(back->stderr_tail.size() <= m.stderr_tail.size());
}

}  // namespace
}  // namespace lockstep::protocol

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::protocol;
  CheckDecode(std::string_view(reinterpret_cast<const char*>(data), size));
  CheckEncode(data, size);
  return 0;
}
