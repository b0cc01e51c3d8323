#include "protocol/termination.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

namespace lockstep::protocol {
namespace {

using nlohmann::json;

// The keys, named once for the encoder and the decoder.
constexpr const char* kVersion = "version";
constexpr const char* kReason = "reason";
constexpr const char* kAttempt = "attempt";
constexpr const char* kRestartCount = "restartCount";
constexpr const char* kRequestedRestarts = "requestedRestarts";
constexpr const char* kNodeRank = "nodeRank";
constexpr const char* kRank = "rank";
constexpr const char* kExitCode = "exitCode";
constexpr const char* kSignal = "signal";
constexpr const char* kMessage = "message";
constexpr const char* kStderrTail = "stderrTail";
constexpr const char* kProgress = "progress";
constexpr const char* kStep = "step";
constexpr const char* kTotalSteps = "totalSteps";
constexpr const char* kSamplesPerSecondMilli = "samplesPerSecondMilli";
constexpr const char* kCheckpointStep = "checkpointStep";

constexpr size_t kMaxMessageBytes = 1024;

json ToJson(const TerminationMessage& m, const std::string& message,
            const std::vector<std::string>& tail) {
  json j = {{kVersion, m.version},         {kReason, std::string(ToString(m.reason))},
            {kAttempt, m.attempt},         {kRestartCount, m.restart_count},
            {kNodeRank, m.node_rank},      {kRank, m.rank},
            {kExitCode, m.exit_code},      {kSignal, m.signal},
            {kMessage, message},           {kStderrTail, tail}};
  // Absent unless the operator asked: most jobs never do.
  if (m.requested_restarts > 0) j[kRequestedRestarts] = m.requested_restarts;
  if (m.progress) {
    j[kProgress] = {{kStep, m.progress->step},
                    {kTotalSteps, m.progress->total_steps},
                    {kSamplesPerSecondMilli, m.progress->samples_per_second_milli}};
    if (m.progress->checkpoint_step) j[kProgress][kCheckpointStep] = *m.progress->checkpoint_step;
  }
  return j;
}

// A JSON integer >= 0 into `out`; false (and `out` unchanged) otherwise.
bool ReadCount(const json& j, const char* key, uint64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (it->is_number_unsigned()) {
    *out = it->get<uint64_t>();
    return true;
  }
  if (it->is_number_integer() && it->get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(it->get<int64_t>());
    return true;
  }
  return false;
}

std::optional<TrainingProgress> ReadProgress(const json& j) {
  auto it = j.find(kProgress);
  if (it == j.end() || !it->is_object()) return std::nullopt;
  TrainingProgress p;
  if (!ReadCount(*it, kStep, &p.step)) return std::nullopt;
  ReadCount(*it, kTotalSteps, &p.total_steps);
  ReadCount(*it, kSamplesPerSecondMilli, &p.samples_per_second_milli);
  uint64_t checkpoint = 0;
  if (ReadCount(*it, kCheckpointStep, &checkpoint)) p.checkpoint_step = checkpoint;
  return p;
}

// An integer beyond int's range keeps the default: get<int>() would wrap it, and a container can
// write anything here (an exitCode of 2^32 + 3 must not read as 3 and match a FailJob rule).
void ReadInt(const json& j, const char* key, int* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return;
  constexpr int64_t kMin = std::numeric_limits<int>::min(), kMax = std::numeric_limits<int>::max();
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() <= static_cast<uint64_t>(kMax)) *out = it->get<int>();
    return;
  }
  const int64_t v = it->get<int64_t>();
  if (v >= kMin && v <= kMax) *out = static_cast<int>(v);
}

void ReadString(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) *out = it->get<std::string>();
}

}  // namespace

std::string EncodeTermination(const TerminationMessage& m) {
  std::vector<std::string> tail = m.stderr_tail;
  std::string message = m.message.substr(0, kMaxMessageBytes);
  for (;;) {
    std::string out = ToJson(m, message, tail)
                          .dump(-1, ' ', false, json::error_handler_t::replace);
    if (out.size() <= kMaxTerminationBytes) return out;
    if (!tail.empty()) {
      tail.erase(tail.begin());
    } else {
      message.resize(message.size() / 2);
    }
  }
}

std::optional<TerminationMessage> DecodeTermination(std::string_view text) {
  if (text.empty() || text.front() != '{') return std::nullopt;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(kStderrTail)) return std::nullopt;
  TerminationMessage m;
  m.version = 1;  // absent: written before the field existed, with version 1's keys
  ReadInt(j, kVersion, &m.version);
  std::string reason;
  ReadString(j, kReason, &reason);
  m.reason = ParseFailureReason(reason);
  ReadInt(j, kAttempt, &m.attempt);
  ReadInt(j, kRestartCount, &m.restart_count);
  ReadInt(j, kRequestedRestarts, &m.requested_restarts);
  // Saturated like a Status answer's counters (messages.h kMaxCounter): the operator adds them to
  // int32 status counts, and a container may write any integer here.
  constexpr int kMaxRestarts = static_cast<int>(kMaxCounter);
  m.restart_count = std::clamp(m.restart_count, 0, kMaxRestarts);
  m.requested_restarts = std::clamp(m.requested_restarts, 0, kMaxRestarts);
  ReadInt(j, kNodeRank, &m.node_rank);
  ReadInt(j, kRank, &m.rank);
  ReadInt(j, kExitCode, &m.exit_code);
  ReadInt(j, kSignal, &m.signal);
  ReadString(j, kMessage, &m.message);
  if (const json& lines = j.at(kStderrTail); lines.is_array()) {
    for (const json& line : lines) {
      if (line.is_string()) m.stderr_tail.push_back(line.get<std::string>());
    }
  }
  m.progress = ReadProgress(j);
  return m;
}

}  // namespace lockstep::protocol
