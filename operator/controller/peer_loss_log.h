#pragma once
// When the reconciler logs a job's peer-loss verdicts (TrainingJobReconciler::NotePeerLoss).
// Each lost report's verdict is judged once per report, and a report is worker-0's word: one
// whose answer names a new loss time at every poll (hostile or broken, issue 44) makes a new
// report each time, 485 log lines in 9 s from 24 such jobs before this limit. So per job and
// verdict at most kPeerLossLogBurst lines within any kPeerLossLogWindow; the verdicts held back
// are counted, and the next line logged for that job and verdict says how many (its "held_back"
// field). An honest loss of a few nodes logs each verdict of each report; the metric
// (lockstep_peer_loss_reports_total) still counts every report.
//
// Holds at most kMaxPeerLossLogKeys job/verdict pairs: past that, the pairs with no line in their
// window are dropped (with what they held back), then the first ones. Not thread-safe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"

namespace lockstep::controller {

inline constexpr std::chrono::seconds kPeerLossLogWindow{60};
inline constexpr size_t kPeerLossLogBurst = 3;
inline constexpr size_t kMaxPeerLossLogKeys = 4 * 4096;

class PeerLossLogLimit {
 public:
  // Whether to log one more `verdict` for `job` now: the number of its verdicts held back since
  // its last line, or nullopt (this one is held back and counted).
  std::optional<uint64_t> Allow(const std::string& job, const std::string& verdict,
                                Clock::Steady now);
  size_t keys() const { return keys_.size(); }

 private:
  struct Key {
    std::deque<Clock::Steady> logged;  // within the window, oldest first
    uint64_t held_back = 0;
  };
  void Prune(Clock::Steady now);
  std::map<std::string, Key> keys_;  // by "job|verdict"
};

}  // namespace lockstep::controller
