#pragma once
// ProgressStallWatch: the trainers' progress reports as a hang signal (issue 21: "a job whose
// progress stops while its ranks live is what hang detection already looks for"). With
// --hang-timeout on, the launcher feeds it the pod's latest LOCKSTEP_PROGRESS_FILE report about
// once a second; a step that stops changing is a hang (Attempt::CheckChildren reports it like
// the heartbeat-file hang: FailureReason::kHang, exit 76 once restarts are used up).
//
// When the reports are judged, so that a trainer that reports rarely is never called hung:
// - only reports read during this attempt count (the file outlives in-place rounds, and a
//   resumed trainer may report the step it stopped at);
// - only once the step changed twice in this attempt: the first change starts the clock, the
//   second gives the trainer's own pace;
// - stalled when the step has not changed for max(timeout, 3 x the longest gap between two
//   changes seen in this attempt): a trainer reporting every 100 steps of 1 s is not hung at
//   a 30 s hang timeout, one whose steps took 2 s and stopped is hung after the timeout.
// - never once the step reached totalSteps: the trainer is finishing (final checkpoint, eval,
//   teardown), which takes as long as it takes.
// A trainer that never reports is judged by the heartbeat file or its output only, as before.
// Pure (no I/O, no clock of its own); single-threaded.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace lockstep::launcher::progress {

class ProgressStallWatch {
 public:
  using Steady = std::chrono::steady_clock;

  // `reports_before`: ProgressFileReader::reports() when the attempt's children started.
  explicit ProgressStallWatch(uint64_t reports_before) : reports_before_(reports_before) {}

  // One look at the latest report: `reports` well-formed lines read so far, the latest one's
  // `step` and `total_steps` (0: unknown) (ignored while reports == reports_before). Returns the
  // hang's description when the step stalled (see above), else nullopt. `timeout` <= 0: never.
  std::optional<std::string> Observe(Steady::time_point now, uint64_t reports, uint64_t step,
                                     uint64_t total_steps, std::chrono::milliseconds timeout);

 private:
  const uint64_t reports_before_;
  int changes_ = 0;  // step changes seen in this attempt (the first report counts as one)
  uint64_t last_step_ = 0;
  Steady::time_point last_change_{};
  Steady::duration longest_gap_{};
};

}  // namespace lockstep::launcher::progress
