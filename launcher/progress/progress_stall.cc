#include "launcher/progress/progress_stall.h"

#include <algorithm>
#include <cstdio>

namespace lockstep::launcher::progress {

std::optional<std::string> ProgressStallWatch::Observe(Steady::time_point now, uint64_t reports,
                                                       uint64_t step, uint64_t total_steps,
                                                       std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0 || reports <= reports_before_) return std::nullopt;
  if (changes_ == 0 || step != last_step_) {
    if (changes_ > 0) longest_gap_ = std::max(longest_gap_, now - last_change_);
    ++changes_;
    last_step_ = step;
    last_change_ = now;
    return std::nullopt;
  }
  if (changes_ < 2) return std::nullopt;  // the trainer's pace is not known yet
  if (total_steps > 0 && step >= total_steps) return std::nullopt;  // finishing
  const Steady::duration limit = std::max<Steady::duration>(timeout, 3 * longest_gap_);
  const Steady::duration still = now - last_change_;
  if (still <= limit) return std::nullopt;
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f",
                std::chrono::duration<double>(still).count());
  return "training progress stuck at step " + std::to_string(step) + " for " + secs +
         " s (LOCKSTEP_PROGRESS_FILE)";
}

}  // namespace lockstep::launcher::progress
