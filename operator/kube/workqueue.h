#pragma once
// A rate-limited work queue with client-go's contract:
//  - items are keys ("namespace/name"), deduplicated while waiting;
//  - a key handed out by Get() is not handed out again until Done(key); a key re-added while
//    it is processed runs once more after Done;
//  - AddAfter delays an add; AddRateLimited delays by the rate limiter (per-item exponential
//    5 ms .. 1000 s, max'ed with an overall 10 qps / 100 burst bucket by default), Forget resets
//    the per-item backoff;
//  - ShutDown drops delayed keys, ignores later adds and wakes all waiters; Get() still hands
//    out queued keys and returns nullopt once none is left. ShutDownWithDrain also waits until
//    every handed-out key is Done.
// Thread-safe.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "common/clock.h"
#include "operator/kube/metrics.h"
#include "operator/kube/rate_limiter.h"

namespace lockstep::kube {

class QueueRateLimiter {
 public:
  virtual ~QueueRateLimiter() = default;
  // How long to wait before `key` may be processed again; records one more failure.
  virtual std::chrono::nanoseconds When(const std::string& key) = 0;
  virtual void Forget(const std::string& key) = 0;
  virtual int NumRequeues(const std::string& key) = 0;
};

// base * 2^failures, capped. Thread-safe.
class ItemExponentialRateLimiter final : public QueueRateLimiter {
 public:
  ItemExponentialRateLimiter(std::chrono::nanoseconds base, std::chrono::nanoseconds cap);
  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  const std::chrono::nanoseconds base_;
  const std::chrono::nanoseconds cap_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;  // guarded by mu_
};

// An overall token bucket; per-item state is not tracked.
class BucketRateLimiter final : public QueueRateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, const Clock& clock = RealClock::Get());
  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  TokenBucket bucket_;
};

// The longest delay of its limiters.
class MaxOfRateLimiter final : public QueueRateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<QueueRateLimiter>> limiters);
  std::chrono::nanoseconds When(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  std::vector<std::unique_ptr<QueueRateLimiter>> limiters_;
};

// client-go's DefaultControllerRateLimiter: max(exponential 5 ms..1000 s, bucket 10 qps/100).
std::unique_ptr<QueueRateLimiter> DefaultControllerRateLimiter(
    const Clock& clock = RealClock::Get());

class WorkQueue {
 public:
  // `metrics` may be null; with metrics a helper thread refreshes the unfinished-work gauges
  // every 500 ms, as client-go does.
  WorkQueue(std::string name, std::unique_ptr<QueueRateLimiter> limiter,
            const Clock& clock = RealClock::Get(), KubeMetrics* metrics = nullptr);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is ready; nullopt after ShutDown once nothing is queued.
  std::optional<std::string> Get();
  void Done(const std::string& key);

  void ShutDown();
  void ShutDownWithDrain();
  bool ShuttingDown() const;
  // Keys ready to be handed out (not the delayed ones).
  size_t Len() const;
  // Keys waiting for their delay.
  size_t NumDelayed() const;

 private:
  void AddLocked(const std::string& key, Clock::Steady now);  // requires mu_
  void PromoteReadyLocked(Clock::Steady now);                   // requires mu_
  void UpdateGaugesLocked(Clock::Steady now);                   // requires mu_
  void MetricsLoop();

  const std::string name_;
  std::unique_ptr<QueueRateLimiter> limiter_;
  const Clock& clock_;
  std::optional<WorkQueueMetrics> metrics_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable metrics_cv_;
  std::deque<std::string> queue_;                              // guarded by mu_
  std::unordered_set<std::string> dirty_;                      // guarded by mu_
  std::unordered_map<std::string, Clock::Steady> processing_;  // key -> start; guarded by mu_
  std::unordered_map<std::string, Clock::Steady> added_at_;    // for queue duration; mu_
  std::multimap<Clock::Steady, std::string> delayed_;          // guarded by mu_
  std::unordered_map<std::string, std::multimap<Clock::Steady, std::string>::iterator>
      delayed_index_;  // guarded by mu_
  bool shutting_down_ = false;  // guarded by mu_
  std::thread metrics_thread_;
};

}  // namespace lockstep::kube
