#pragma once
// Clock behind an interface so policies (backoff, TTL, deadlines, heartbeats) are testable with a
// fake clock. Implementations are thread-safe.

#include <chrono>

namespace lockstep {

class Clock {
 public:
  using Steady = std::chrono::steady_clock::time_point;
  using Wall = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  // Monotonic time for intervals and timeouts.
  virtual Steady Now() const = 0;
  // Wall-clock time for timestamps written to the API (conditions, status times).
  virtual Wall WallNow() const = 0;
};

class RealClock final : public Clock {
 public:
  Steady Now() const override { return std::chrono::steady_clock::now(); }
  Wall WallNow() const override { return std::chrono::system_clock::now(); }
  // A process-wide instance.
  static const RealClock& Get();
};

}  // namespace lockstep
