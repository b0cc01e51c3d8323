// Fuzz target for the trainers' progress lines (launcher/progress/progress_line.h): anything a
// training process appends to LOCKSTEP_PROGRESS_FILE. The first byte picks whether the chunk
// starts mid-line; the rest is the chunk. Checked beyond "no crash":
//   - the scan consumes whole lines only (up to and including a newline), and scanning just
//     what it consumed gives the same report and count;
//   - a report parsed from any line is within the wire's bounds, and the line a trainer would
//     write for it parses back to the same report.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/check.h"
#include "launcher/progress/progress_line.h"
#include "tests/fuzz/fuzz_input.h"

namespace lockstep::launcher::progress {
namespace {

void CheckReport(const protocol::TrainingProgress& p) {
  LS_CHECK(p.samples_per_second_milli <= static_cast<uint64_t>(kMaxSamplesPerSecond * 1000.0) + 1);
  LS_CHECK(p.malformed_lines == 0);
  nlohmann::json line = {{"step", p.step}, {"totalSteps", p.total_steps}};
  // Thousandths as a decimal number, as a trainer would print them.
  line["samplesPerSecond"] =
      nlohmann::json::parse(std::to_string(p.samples_per_second_milli / 1000) + "." +
                            std::to_string(1000 + p.samples_per_second_milli % 1000).substr(1));
  const std::optional<protocol::TrainingProgress> back = ParseProgressLine(line.dump());
  LS_CHECK(back.has_value());
  LS_CHECK(back->step == p.step && back->total_steps == p.total_steps);
  const uint64_t a = back->samples_per_second_milli, b = p.samples_per_second_milli;
  LS_CHECK((a > b ? a - b : b - a) <= 1);
}

}  // namespace
}  // namespace lockstep::launcher::progress

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::launcher::progress;
  lockstep::fuzz::FuzzInput in(data, size);
  const bool mid_line = (in.Byte() & 1) != 0;
  const std::string_view chunk = in.Bytes(size);
  const ChunkScan scan = ScanProgressChunk(chunk, mid_line);
  LS_CHECK(scan.consumed <= chunk.size());
  LS_CHECK(scan.consumed == 0 || chunk[scan.consumed - 1] == '\n');
  const ChunkScan again = ScanProgressChunk(chunk.substr(0, scan.consumed), mid_line);
  LS_CHECK(again.latest == scan.latest && again.malformed == scan.malformed);
  LS_CHECK(again.consumed == scan.consumed);
  if (scan.latest) CheckReport(*scan.latest);
  if (std::optional<lockstep::protocol::TrainingProgress> p = ParseProgressLine(chunk)) {
    CheckReport(*p);
  }
  return 0;
}
