#pragma once
// Token bucket (client-side QPS/burst) and capped exponential backoff with jitter.

#include <chrono>
#include <mutex>
#include <random>

#include "common/clock.h"

namespace lockstep::kube {

// A token bucket: `qps` tokens per second, at most `burst` stored. Thread-safe.
// qps <= 0 disables limiting (every Reserve returns zero), like controller-runtime's -1.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst, const Clock& clock = RealClock::Get());
  // Takes one token, possibly from the future, and returns how long the caller must wait
  // before using it. Reservations are first come, first served.
  std::chrono::nanoseconds Reserve();
  // Reserve() then sleep for the returned duration.
  void Wait();

 private:
  const double qps_;
  const double burst_;
  const Clock& clock_;
  std::mutex mu_;
  double tokens_;          // guarded by mu_; may go negative (reserved future tokens)
  Clock::Steady last_;     // guarded by mu_
};

struct BackoffPolicy {
  std::chrono::milliseconds base{std::chrono::milliseconds(200)};
  std::chrono::milliseconds cap{std::chrono::seconds(30)};
  double factor = 2.0;
  double jitter = 1.0;  // the delay is scaled by a uniform factor in [1, 1 + jitter]
};

// Delay before retry number `attempt` (0-based): min(cap, base * factor^attempt) * U[1, 1+jitter],
// so never more than cap * (1 + jitter). Thread-safe.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, uint64_t seed = std::random_device{}());
  std::chrono::milliseconds Delay(int attempt);

 private:
  const BackoffPolicy policy_;
  std::mutex mu_;
  std::mt19937_64 rng_;  // guarded by mu_
};

}  // namespace lockstep::kube
