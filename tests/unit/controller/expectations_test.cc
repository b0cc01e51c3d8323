#include "operator/controller/expectations.h"

#include <gtest/gtest.h>

#include "tests/testing/fake_clock.h"

namespace lockstep::controller {
namespace {

using ::lockstep::testing::FakeClock;

TEST(ExpectationsTest, CreationsAreSatisfiedOnlyByTheirOwnPods) {
  FakeClock clock;
  Expectations e(clock);
  EXPECT_TRUE(e.Satisfied("ns/a"));
  e.ExpectCreations("ns/a", {"a-worker-0", "a-worker-1"});
  EXPECT_FALSE(e.Satisfied("ns/a"));
  e.CreationObserved("ns/a", "a-worker-0");
  e.CreationObserved("ns/a", "unrelated");
  e.CreationObserved("ns/b", "a-worker-1");
  EXPECT_FALSE(e.Satisfied("ns/a"));
  e.CreationObserved("ns/a", "a-worker-1");
  EXPECT_TRUE(e.Satisfied("ns/a"));
}

TEST(ExpectationsTest, DeletionsAreTrackedByUid) {
  FakeClock clock;
  Expectations e(clock);
  e.ExpectDeletions("ns/a", {"uid-1"});
  e.DeletionObserved("ns/a", "uid-2");
  EXPECT_FALSE(e.Satisfied("ns/a"));
  e.DeletionObserved("ns/a", "uid-1");
  EXPECT_TRUE(e.Satisfied("ns/a"));
}

TEST(ExpectationsTest, ExpireAfterTheTtlSoALostEventCannotWedgeAJob) {
  FakeClock clock;
  Expectations e(clock, std::chrono::minutes(5));
  e.ExpectCreations("ns/a", {"p"});
  clock.Advance(std::chrono::minutes(4));
  EXPECT_FALSE(e.Satisfied("ns/a"));
  clock.Advance(std::chrono::minutes(1));
  EXPECT_TRUE(e.Satisfied("ns/a"));
}

TEST(ExpectationsTest, ForgetDropsEverything) {
  FakeClock clock;
  Expectations e(clock);
  e.ExpectCreations("ns/a", {"p"});
  e.ExpectDeletions("ns/a", {"u"});
  e.Forget("ns/a");
  EXPECT_TRUE(e.Satisfied("ns/a"));
}

TEST(ExpectationsTest, DeletedByUsRemembersEveryIssuedDeletionForTheTtl) {
  FakeClock clock;
  Expectations e(clock, std::chrono::minutes(5));
  e.ExpectDeletions("ns/a", {"uid-1"});
  EXPECT_TRUE(e.DeletedByUs("uid-1"));
  EXPECT_FALSE(e.DeletedByUs("uid-2"));
  // Observed (a deletionTimestamp, then the delete): still ours, which the pending set forgets.
  e.DeletionObserved("ns/a", "uid-1");
  EXPECT_TRUE(e.Satisfied("ns/a"));
  EXPECT_TRUE(e.DeletedByUs("uid-1"));
  clock.Advance(std::chrono::minutes(4));
  e.ExpectDeletions("ns/b", {"uid-3"});
  clock.Advance(std::chrono::minutes(2));
  EXPECT_FALSE(e.DeletedByUs("uid-1"));  // past the TTL
  EXPECT_TRUE(e.DeletedByUs("uid-3"));
  // Issued again later: the newer time counts, the older entry's pruning does not drop it.
  e.ExpectDeletions("ns/b", {"uid-3"});
  clock.Advance(std::chrono::minutes(4));
  e.ExpectDeletions("ns/c", {"uid-4"});  // prunes what is past the TTL
  EXPECT_TRUE(e.DeletedByUs("uid-3"));
}

}  // namespace
}  // namespace lockstep::controller
