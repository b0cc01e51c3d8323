#include "launcher/progress/progress_line.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace lockstep::launcher::progress {
namespace {

// A JSON integer >= 0 (a float, even a whole one, is not: steps are counted).
std::optional<uint64_t> Count(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

}  // namespace

std::optional<protocol::TrainingProgress> ParseProgressLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxProgressLineBytes) return std::nullopt;
  // No exceptions: a parse error is a discarded value.
  const nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  protocol::TrainingProgress p;
  auto step = doc.find("step");
  if (step == doc.end()) return std::nullopt;
  std::optional<uint64_t> s = Count(*step);
  if (!s) return std::nullopt;
  p.step = *s;
  if (auto total = doc.find("totalSteps"); total != doc.end() && !total->is_null()) {
    std::optional<uint64_t> t = Count(*total);
    if (!t) return std::nullopt;
    p.total_steps = *t;
  }
  if (auto rate = doc.find("samplesPerSecond"); rate != doc.end() && !rate->is_null()) {
    if (!rate->is_number()) return std::nullopt;
    const double r = rate->get<double>();
    if (!std::isfinite(r) || r < 0) return std::nullopt;
    p.samples_per_second_milli =
        static_cast<uint64_t>(std::llround(std::min(r, kMaxSamplesPerSecond) * 1000.0));
  }
  if (auto ckpt = doc.find("checkpointStep"); ckpt != doc.end() && !ckpt->is_null()) {
    std::optional<uint64_t> c = Count(*ckpt);
    if (!c) return std::nullopt;
    p.checkpoint_step = *c;
  }
  return p;
}

ChunkScan ScanProgressChunk(std::string_view chunk, bool starts_mid_line) {
  ChunkScan out;
  size_t pos = 0;
  if (starts_mid_line) {
    const size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) return out;  // one partial line: nothing complete yet
    pos = nl + 1;
  }
  for (;;) {
    const size_t nl = chunk.find('\n', pos);
    if (nl == std::string_view::npos) break;
    const std::string_view line = chunk.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line == "\r") continue;
    if (std::optional<protocol::TrainingProgress> p = ParseProgressLine(line)) {
      out.latest = *p;
      ++out.reports;
    } else {
      ++out.malformed;
    }
  }
  out.consumed = pos;
  return out;
}

}  // namespace lockstep::launcher::progress
