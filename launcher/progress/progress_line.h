#pragma once
// The trainer's progress report (LOCKSTEP_PROGRESS_FILE, docs/launcher.md "Progress"): one JSON
// object per line, appended by the trainer,
//   {"step": 1200, "totalSteps": 5000, "samplesPerSecond": 812.5, "checkpointStep": 1000}
// Pure: parsing a line, and scanning a chunk of the file for its complete lines. Nothing here
// throws or crashes on any input (fuzzed: tests/fuzz/progress_line).
//
// A line is a report when it is a JSON object whose "step" is an integer >= 0. "totalSteps"
// (integer >= 0; 0 = unknown), "samplesPerSecond" (finite number >= 0) and "checkpointStep" (integer
// >= 0: the step the newest checkpoint holds, docs/goodput.md) are optional; other keys
// are ignored (so trainers may add their own). Anything else, and any line longer than
// kMaxProgressLineBytes, is malformed.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "protocol/messages.h"

namespace lockstep::launcher::progress {

inline constexpr size_t kMaxProgressLineBytes = 4096;
// Larger rates are cut to this (fixed point on the wire: thousandths).
inline constexpr double kMaxSamplesPerSecond = 1e12;

// The report in `line` (no trailing newline; a trailing '\r' is allowed), or nullopt when the
// line is malformed.
std::optional<protocol::TrainingProgress> ParseProgressLine(std::string_view line);

struct ChunkScan {
  std::optional<protocol::TrainingProgress> latest;  // the last well-formed line's report
  uint32_t reports = 0;                              // well-formed lines
  uint32_t malformed = 0;                            // complete non-empty lines that were not
  // Bytes of the chunk up to and including its last newline: what was scanned. The rest is a
  // line still being written, read again next time.
  size_t consumed = 0;
};

// The complete lines of `chunk` (each ends with '\n'). When `starts_mid_line`, the bytes up to the
// first newline are the end of a line whose start was not read: skipped, neither parsed nor
// counted. Empty lines are skipped. `malformed` and `latest` leave out malformed_lines.
ChunkScan ScanProgressChunk(std::string_view chunk, bool starts_mid_line);

}  // namespace lockstep::launcher::progress
