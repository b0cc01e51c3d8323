#pragma once
// A Clock (common/clock.h) that moves only when the test says: Advance() moves both readings by
// the same amount. Thread-safe, so components with threads of their own (work queue, event
// recorder, launcher monitor) may read it while the test advances it. The one fake clock of the
// unit tests.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/clock.h"

namespace lockstep::testing {

class FakeClock final : public Clock {
 public:
  // Steady time starts an hour after its epoch (so a test can name an earlier point), wall time
  // in 2020, both moving together.
  Steady Now() const override { return Steady(std::chrono::hours(1) + Elapsed()); }
  Wall WallNow() const override {
    return Wall(std::chrono::duration_cast<Wall::duration>(std::chrono::hours(24 * 365 * 50) +
                                                           std::chrono::hours(1) + Elapsed()));
  }
  void Advance(std::chrono::nanoseconds d) { elapsed_ns_ += d.count(); }

 private:
  std::chrono::nanoseconds Elapsed() const { return std::chrono::nanoseconds(elapsed_ns_.load()); }
  std::atomic<int64_t> elapsed_ns_{0};
};

}  // namespace lockstep::testing
