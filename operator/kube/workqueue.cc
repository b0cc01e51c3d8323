#include "operator/kube/workqueue.h"

#include <algorithm>
#include <cmath>

namespace lockstep::kube {
namespace {

// How long a blocked Get() sleeps at most before re-checking delayed keys: bounds the lag when
// the clock is a fake one advanced by a test.
constexpr auto kMaxDelayedPoll = std::chrono::milliseconds(20);

double Seconds(Clock::Steady::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

ItemExponentialRateLimiter::ItemExponentialRateLimiter(std::chrono::nanoseconds base,
                                                       std::chrono::nanoseconds cap)
    : base_(base), cap_(cap) {}

std::chrono::nanoseconds ItemExponentialRateLimiter::When(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const int exp = failures_[key]++;
  const double delay = static_cast<double>(base_.count()) * std::pow(2.0, exp);
  if (delay >= static_cast<double>(cap_.count())) return cap_;
  return std::chrono::nanoseconds(static_cast<int64_t>(delay));
}

void ItemExponentialRateLimiter::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int ItemExponentialRateLimiter::NumRequeues(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, const Clock& clock)
    : bucket_(qps, burst, clock) {}

std::chrono::nanoseconds BucketRateLimiter::When(const std::string&) { return bucket_.Reserve(); }

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<QueueRateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

std::chrono::nanoseconds MaxOfRateLimiter::When(const std::string& key) {
  std::chrono::nanoseconds longest{0};
  for (auto& l : limiters_) longest = std::max(longest, l->When(key));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& key) {
  for (auto& l : limiters_) l->Forget(key);
}

int MaxOfRateLimiter::NumRequeues(const std::string& key) {
  int most = 0;
  for (auto& l : limiters_) most = std::max(most, l->NumRequeues(key));
  return most;
}

std::unique_ptr<QueueRateLimiter> DefaultControllerRateLimiter(const Clock& clock) {
  std::vector<std::unique_ptr<QueueRateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialRateLimiter>(std::chrono::milliseconds(5),
                                                                  std::chrono::seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

WorkQueue::WorkQueue(std::string name, std::unique_ptr<QueueRateLimiter> limiter,
                     const Clock& clock, KubeMetrics* metrics)
    : name_(std::move(name)), limiter_(std::move(limiter)), clock_(clock) {
  if (metrics != nullptr) {
    metrics_ = metrics->ForQueue(name_);
    metrics_thread_ = std::thread([this] { MetricsLoop(); });
  }
}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (metrics_thread_.joinable()) metrics_thread_.join();
}

void WorkQueue::AddLocked(const std::string& key, Clock::Steady now) {
  if (shutting_down_) return;
  if (metrics_) metrics_->adds->Increment();
  if (!dirty_.insert(key).second) return;
  added_at_.emplace(key, now);
  if (processing_.count(key) != 0) return;  // queued again by Done()
  queue_.push_back(key);
  if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
  cv_.notify_all();
}

void WorkQueue::PromoteReadyLocked(Clock::Steady now) {
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_index_.erase(key);
    delayed_.erase(delayed_.begin());
    AddLocked(key, now);
  }
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key, clock_.Now());
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  if (delay.count() <= 0) return Add(key);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  const Clock::Steady ready =
      clock_.Now() + std::chrono::duration_cast<Clock::Steady::duration>(delay);
  if (auto it = delayed_index_.find(key); it != delayed_index_.end()) {
    if (it->second->first <= ready) return;  // an earlier add already pending wins
    delayed_.erase(it->second);
    delayed_index_.erase(it);
  }
  delayed_index_[key] = delayed_.emplace(ready, key);
  cv_.notify_all();  // a waiting Get() may need to wake sooner
}

void WorkQueue::AddRateLimited(const std::string& key) {
  if (metrics_) metrics_->retries->Increment();
  AddAfter(key, limiter_->When(key));
}

void WorkQueue::Forget(const std::string& key) { limiter_->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) { return limiter_->NumRequeues(key); }

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const Clock::Steady now = clock_.Now();
    PromoteReadyLocked(now);
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      dirty_.erase(key);
      processing_[key] = now;
      if (metrics_) {
        metrics_->depth->Set(static_cast<double>(queue_.size()));
        if (auto it = added_at_.find(key); it != added_at_.end()) {
          metrics_->queue_duration->Observe(Seconds(now - it->second));
        }
      }
      added_at_.erase(key);
      return key;
    }
    if (shutting_down_) return std::nullopt;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      const auto until = delayed_.begin()->first - now;
      cv_.wait_for(lock, std::min<Clock::Steady::duration>(until, kMaxDelayedPoll));
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = processing_.find(key);
  if (it == processing_.end()) return;
  if (metrics_) metrics_->work_duration->Observe(Seconds(clock_.Now() - it->second));
  processing_.erase(it);
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
    cv_.notify_all();
  }
  if (processing_.empty()) cv_.notify_all();  // ShutDownWithDrain waits for this
}

void WorkQueue::ShutDown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
    delayed_.clear();
    delayed_index_.clear();
  }
  cv_.notify_all();
  metrics_cv_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  ShutDown();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return processing_.empty(); });
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

size_t WorkQueue::NumDelayed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return delayed_.size();
}

void WorkQueue::UpdateGaugesLocked(Clock::Steady now) {
  double total = 0;
  double longest = 0;
  for (const auto& [key, start] : processing_) {
    const double s = Seconds(now - start);
    total += s;
    longest = std::max(longest, s);
  }
  metrics_->unfinished_work_seconds->Set(total);
  metrics_->longest_running_processor_seconds->Set(longest);
}

void WorkQueue::MetricsLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutting_down_) {
    UpdateGaugesLocked(clock_.Now());
    metrics_cv_.wait_for(lock, std::chrono::milliseconds(500));
  }
  UpdateGaugesLocked(clock_.Now());
}

}  // namespace lockstep::kube
