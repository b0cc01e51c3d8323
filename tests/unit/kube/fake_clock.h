#pragma once
// A manually advanced Clock for tests. Thread-safe.

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace lockstep::kube::testing {

class FakeClock final : public Clock {
 public:
  Steady Now() const override { return Steady(std::chrono::nanoseconds(now_ns_.load())); }
  Wall WallNow() const override {
    return Wall(std::chrono::duration_cast<Wall::duration>(std::chrono::nanoseconds(
        now_ns_.load() + std::chrono::nanoseconds(std::chrono::hours(24 * 365 * 50)).count())));
  }
  void Advance(std::chrono::nanoseconds d) { now_ns_ += d.count(); }

 private:
  std::atomic<int64_t> now_ns_{std::chrono::nanoseconds(std::chrono::hours(1)).count()};
};

}  // namespace lockstep::kube::testing
