#include "operator/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace lockstep::kube {

TokenBucket::TokenBucket(double qps, int burst, const Clock& clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(clock), tokens_(burst_), last_(clock.Now()) {}

std::chrono::nanoseconds TokenBucket::Reserve() {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::Steady now = clock_.Now();
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(-tokens_ / qps_ * 1e9)));
}

void TokenBucket::Wait() {
  const auto delay = Reserve();
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), rng_(seed) {}

std::chrono::milliseconds Backoff::Delay(int attempt) {
  const double base = static_cast<double>(policy_.base.count());
  const double cap = static_cast<double>(policy_.cap.count());
  const double raw = std::min(cap, base * std::pow(policy_.factor, std::max(0, attempt)));
  double scale = 1.0;
  if (policy_.jitter > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    scale += std::uniform_real_distribution<double>(0.0, policy_.jitter)(rng_);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(raw * scale));
}

}  // namespace lockstep::kube
