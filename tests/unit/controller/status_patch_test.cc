#include <gtest/gtest.h>

#include "operator/api/conditions.h"
#include "operator/controller/reconciler.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

TEST(StatusPatchTest, NothingChangedMeansNoWrite) {
  api::TrainingJobStatus s;
  s.replicas = 2;
  EXPECT_TRUE(StatusPatch(s, s, "5").is_null());
}

TEST(StatusPatchTest, CarriesTheResourceVersionAndNullsRemovedFields) {
  api::TrainingJobStatus before;
  before.start_time = testing::T0();
  api::TrainingJobStatus after = before;
  after.start_time.reset();
  after.replicas = 3;
  const nlohmann::json patch = StatusPatch(before, after, "42");
  ASSERT_FALSE(patch.is_null());
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "42");
  EXPECT_TRUE(patch["status"]["startTime"].is_null());
  EXPECT_TRUE(patch["status"].contains("startTime"));
  EXPECT_EQ(patch["status"]["replicas"], 3);
}

// Issue 18, hole 7: after writing attempt 3, a cached job still at attempt 2 is behind (a pass on
// it would see attempt 3's pods as stale and delete them); attempt 3 or later, or a finished
// status once one was written, has caught up.
TEST(CacheShowsTest, TheAttemptAndTheFinishedStatusThisControllerWrote) {
  api::TrainingJobStatus cached;
  cached.attempt = 2;
  EXPECT_FALSE(CacheShows({{}, false, 3, ""}, cached, "7"));
  cached.attempt = 3;
  EXPECT_TRUE(CacheShows({{}, false, 3, ""}, cached, "7"));
  cached.attempt = 4;
  EXPECT_TRUE(CacheShows({{}, false, 3, ""}, cached, "7"));
  EXPECT_FALSE(CacheShows({{}, true, 3, ""}, cached, "7"));  // the finished status not seen yet
  cached.state = api::JobState::kFailed;
  cached.conditions.push_back({std::string(api::kConditionFailed), api::ConditionStatus::kTrue,
                               0, testing::T0(), "MaxRestartsExceeded", "m"});
  EXPECT_TRUE(CacheShows({{}, true, 3, ""}, cached, "7"));
}

// A cached job still at the resourceVersion this controller's last status write replaced has
// not seen that write, whatever it wrote: a pass on it would compute from a status that is gone
// and its write could only be refused (409). Any other version has seen it (versions are
// opaque: equality is all that is compared).
TEST(CacheShowsTest, TheResourceVersionTheLastWriteReplaced) {
  api::TrainingJobStatus cached;
  cached.attempt = 1;
  EXPECT_FALSE(CacheShows({{}, false, 1, "41"}, cached, "41"));
  EXPECT_TRUE(CacheShows({{}, false, 1, "41"}, cached, "42"));
  EXPECT_TRUE(CacheShows({{}, false, 1, "41"}, cached, "40000"));
  EXPECT_TRUE(CacheShows({{}, false, 1, ""}, cached, "41"));  // the write changed nothing
  EXPECT_FALSE(CacheShows({{}, false, 2, "41"}, cached, "42"));  // a newer version, same attempt
}

}  // namespace
}  // namespace lockstep::controller
