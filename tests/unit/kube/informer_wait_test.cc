// WaitForSyncAll (informer.h): several informers under one deadline, on a FakeClock that each
// fake informer's wait advances, so the deadline's edges are pinned without sleeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/informer.h"
#include "tests/testing/fake_clock.h"

namespace lockstep::kube {
namespace {

using ::lockstep::testing::FakeClock;
using std::chrono::milliseconds;

// Syncs `syncs_after` after the test starts (never when unset); a wait moves the clock by what
// it waited, as a real one would.
class FakeInformer final : public InformerBase {
 public:
  FakeInformer(FakeClock& clock, std::optional<milliseconds> syncs_after)
      : clock_(clock), start_(clock.Now()), syncs_after_(syncs_after) {}
  void Start() override {}
  void RequestStop() override {}
  void Stop() override {}
  bool HasSynced() const override { return syncs_after_ && clock_.Now() - start_ >= *syncs_after_; }
  bool WaitForSync(milliseconds timeout) const override {
    waits.push_back(timeout);
    if (HasSynced()) return true;
    const auto until_sync =
        syncs_after_
            ? std::chrono::duration_cast<milliseconds>(*syncs_after_ - (clock_.Now() - start_))
            : timeout;
    clock_.Advance(std::min(timeout, until_sync));
    return HasSynced();
  }
  const std::string& resource() const override { return resource_; }

  mutable std::vector<milliseconds> waits;

 private:
  FakeClock& clock_;
  const Clock::Steady start_;
  const std::optional<milliseconds> syncs_after_;
  const std::string resource_ = "pods";
};

TEST(WaitForSyncAllTest, EachWaitsForWhatIsLeftOfOneDeadline) {
  FakeClock clock;
  FakeInformer a(clock, milliseconds(300)), b(clock, milliseconds(700)), c(clock, milliseconds(0));
  EXPECT_TRUE(WaitForSyncAll({&a, &b, &c}, milliseconds(1000), clock));
  EXPECT_EQ(a.waits, std::vector<milliseconds>{milliseconds(1000)});
  EXPECT_EQ(b.waits, std::vector<milliseconds>{milliseconds(700)});  // 300 ms were spent on a
  EXPECT_EQ(c.waits, std::vector<milliseconds>{milliseconds(300)});
}

TEST(WaitForSyncAllTest, FalseAtTheFirstNotSyncedByTheDeadlineAndNoLaterWait) {
  FakeClock clock;
  FakeInformer a(clock, milliseconds(400)), b(clock, std::nullopt), c(clock, milliseconds(0));
  EXPECT_FALSE(WaitForSyncAll({&a, &b, &c}, milliseconds(1000), clock));
  EXPECT_EQ(b.waits, std::vector<milliseconds>{milliseconds(600)});
  EXPECT_TRUE(c.waits.empty());
  EXPECT_EQ(clock.Now() - Clock::Steady(std::chrono::hours(1)), milliseconds(1000));
}

// The three copies this replaced disagreed here: past the deadline, informers that have synced
// still answer true (a wait of zero each), and one that has not answers false at once.
TEST(WaitForSyncAllTest, PastTheDeadlineSyncedInformersStillAnswerTrue) {
  FakeClock clock;
  FakeInformer slow(clock, milliseconds(1500)), done(clock, milliseconds(0));
  EXPECT_FALSE(WaitForSyncAll({&slow, &done}, milliseconds(1000), clock));
  clock.Advance(milliseconds(500));  // now both have synced, the deadline long past
  EXPECT_TRUE(WaitForSyncAll({&slow, &done}, milliseconds(0), clock));
  EXPECT_EQ(done.waits, std::vector<milliseconds>{milliseconds(0)});

  FakeInformer never(clock, std::nullopt);
  EXPECT_FALSE(WaitForSyncAll({&done, &never}, milliseconds(0), clock));
  EXPECT_EQ(never.waits, std::vector<milliseconds>{milliseconds(0)});
}

TEST(WaitForSyncAllTest, AnyRangeOfInformers) {
  FakeClock clock;
  FakeInformer a(clock, milliseconds(0)), b(clock, milliseconds(10));
  const std::vector<const InformerBase*> all = {&a, &b};
  EXPECT_TRUE(WaitForSyncAll(all, milliseconds(100), clock));
  EXPECT_TRUE(WaitForSyncAll(std::vector<const InformerBase*>{}, milliseconds(0), clock));
}

}  // namespace
}  // namespace lockstep::kube
