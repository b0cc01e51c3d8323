#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lockstep::controller
