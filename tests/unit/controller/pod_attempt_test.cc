// pod_attempt.h: the attempt label read back, and the split by attempt every plan step sees.
#include "operator/controller/pod_attempt.h"

#include <gtest/gtest.h>

#include "operator/api/children.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::InAttempt;
using testing::Pod;

TEST(PodAttemptTest, ReadsTheLabel) {
  EXPECT_EQ(PodAttempt(Pod("worker", 0, "Running")), 0);
  EXPECT_EQ(PodAttempt(InAttempt(Pod("worker", 0, "Running"), 7)), 7);
  kube::Pod bad = Pod("worker", 0, "Running");
  for (const char* value : {"x", "2x", "", " 3"}) {
    bad.meta.labels[std::string(api::kLabelAttempt)] = value;
    EXPECT_EQ(PodAttempt(bad), 0) << value;
  }
}

TEST(PodAttemptTest, SplitByAttempt) {
  const AttemptPods split =
      SplitByAttempt({InAttempt(Pod("worker", 0, "Running"), 2),
                      InAttempt(Pod("worker", 1, "Running"), 1), Pod("worker", 2, "Running")},
                     2);
  ASSERT_EQ(split.current.size(), 1u);
  EXPECT_EQ(split.current[0].meta.name, "job-worker-0");
  ASSERT_EQ(split.stale.size(), 2u);  // the older attempt and the unlabelled pod
}

}  // namespace
}  // namespace lockstep::controller
