#include "operator/kube/workqueue.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <set>
#include <thread>

#include "tests/testing/fake_clock.h"

namespace lockstep::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::unique_ptr<QueueRateLimiter> NoLimit() {
  return std::make_unique<ItemExponentialRateLimiter>(milliseconds(0), milliseconds(0));
}

TEST(WorkQueueTest, DeduplicatesQueuedKeys) {
  WorkQueue q("t", NoLimit());
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get().value(), "a");
  EXPECT_EQ(q.Get().value(), "b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, KeyBeingProcessedIsNotHandedOutAgainUntilDone) {
  WorkQueue q("t", NoLimit());
  q.Add("a");
  ASSERT_EQ(q.Get().value(), "a");
  q.Add("a");  // changed while processing
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u);  // held back until Done
  q.Add("b");
  EXPECT_EQ(q.Get().value(), "b");
  q.Done("b");
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);  // exactly one more run of "a"
  EXPECT_EQ(q.Get().value(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, NoKeyIsProcessedConcurrentlyWithItself) {
  WorkQueue q("t", NoLimit());
  std::mutex mu;
  std::set<std::string> in_flight;
  std::atomic<int> violations{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!in_flight.insert(*key).second) ++violations;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        {
          std::lock_guard<std::mutex> lock(mu);
          in_flight.erase(*key);
        }
        ++processed;
        q.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("k" + std::to_string(i % 5));
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(processed.load(), 0);
}

TEST(WorkQueueTest, AddAfterUsesTheClockAndKeepsTheEarliest) {
  testing::FakeClock clock;
  WorkQueue q("t", NoLimit(), clock);
  q.AddAfter("a", seconds(10));
  q.AddAfter("a", seconds(5));   // earlier wins
  q.AddAfter("a", seconds(60));  // later ignored
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.NumDelayed(), 1u);
  clock.Advance(seconds(4));
  std::atomic<bool> got{false};
  std::thread getter([&] {
    EXPECT_EQ(q.Get().value_or(""), "a");
    got = true;
  });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(got.load());
  clock.Advance(seconds(1));
  getter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(q.NumDelayed(), 0u);
}

TEST(WorkQueueTest, RateLimitedRequeueBacksOffPerItemUntilForget) {
  ItemExponentialRateLimiter limiter(milliseconds(5), seconds(1000));
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
  EXPECT_EQ(limiter.When("a"), milliseconds(10));
  EXPECT_EQ(limiter.When("a"), milliseconds(20));
  EXPECT_EQ(limiter.When("b"), milliseconds(5));
  EXPECT_EQ(limiter.NumRequeues("a"), 3);
  limiter.Forget("a");
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
  for (int i = 0; i < 40; ++i) limiter.When("c");
  EXPECT_EQ(limiter.When("c"), seconds(1000));
}

TEST(WorkQueueTest, DefaultLimiterAddsOverallBucket) {
  testing::FakeClock clock;
  auto limiter = DefaultControllerRateLimiter(clock);
  // 100 distinct keys use up the burst; the 101st waits for the 10 qps bucket (100 ms).
  for (int i = 0; i < 100; ++i) EXPECT_EQ(limiter->When("k" + std::to_string(i)), milliseconds(5));
  EXPECT_EQ(limiter->When("late"), milliseconds(100));
}

TEST(WorkQueueTest, AddRateLimitedGoesThroughDelay) {
  testing::FakeClock clock;
  WorkQueue q("t", std::make_unique<ItemExponentialRateLimiter>(seconds(1), seconds(100)), clock);
  q.AddRateLimited("a");
  q.AddRateLimited("a");  // 1 s then 2 s: the earlier ready time is kept
  EXPECT_EQ(q.NumRequeues("a"), 2);
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(seconds(1));
  EXPECT_EQ(q.Get().value(), "a");
  q.Done("a");
  q.Forget("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
}

TEST(WorkQueueTest, ShutDownHandsOutQueuedKeysThenStops) {
  WorkQueue q("t", NoLimit());
  q.Add("a");
  q.AddAfter("later", seconds(100));
  q.ShutDown();
  q.Add("ignored");
  EXPECT_TRUE(q.ShuttingDown());
  EXPECT_EQ(q.Get().value(), "a");
  EXPECT_FALSE(q.Get().has_value());
  EXPECT_EQ(q.NumDelayed(), 0u);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForInFlightWork) {
  WorkQueue q("t", NoLimit());
  q.Add("a");
  ASSERT_EQ(q.Get().value(), "a");
  std::atomic<bool> drained{false};
  std::thread shutdown([&] {
    q.ShutDownWithDrain();
    drained = true;
  });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(drained.load());
  q.Done("a");
  shutdown.join();
  EXPECT_TRUE(drained.load());
}

TEST(WorkQueueTest, ExportsMetrics) {
  prometheus::Registry registry;
  KubeMetrics metrics(registry);
  {
    WorkQueue q("jobs", NoLimit(), RealClock::Get(), &metrics);
    q.Add("a");
    q.Add("b");
    q.AddRateLimited("c");
    ASSERT_TRUE(q.Get().has_value());
  }
  WorkQueueMetrics m = metrics.ForQueue("jobs");
  EXPECT_EQ(m.adds->Value(), 3);
  EXPECT_EQ(m.retries->Value(), 1);
  EXPECT_GE(m.depth->Value(), 1);
  bool found = false;
  for (const auto& family : registry.Collect()) {
    if (family.name == "workqueue_queue_duration_seconds") {
      found = true;
      ASSERT_EQ(family.metric.size(), 1u);
      EXPECT_EQ(family.metric[0].histogram.sample_count, 1u);
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace lockstep::kube
