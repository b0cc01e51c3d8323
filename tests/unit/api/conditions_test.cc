#include "operator/api/conditions.h"

#include <gtest/gtest.h>

namespace lockstep::api {
namespace {

using std::chrono::seconds;

const Time kT0 = std::chrono::system_clock::from_time_t(1'800'000'000);

Condition Make(std::string_view type, ConditionStatus status, std::string reason,
               int64_t generation = 1) {
  Condition c;
  c.type = std::string(type);
  c.status = status;
  c.reason = std::move(reason);
  c.message = "m";
  c.observed_generation = generation;
  return c;
}

TEST(ConditionsTest, AddsNewConditionWithTransitionTimeNow) {
  std::vector<Condition> conds;
  EXPECT_TRUE(SetCondition(&conds, Make(kConditionRunning, ConditionStatus::kTrue, "Started"),
                           kT0 + std::chrono::milliseconds(700)));
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].last_transition_time, kT0);  // truncated to the API's whole seconds
  EXPECT_TRUE(IsConditionTrue(conds, kConditionRunning));
  EXPECT_FALSE(IsConditionTrue(conds, kConditionFailed));
}

struct Step {
  std::string name;
  Condition next;
  bool want_changed;
  Time want_transition;
};

class SetConditionTest : public ::testing::TestWithParam<Step> {};

// Starting from Running=True (reason Started, generation 1, set at kT0), set `next` at kT0+60s.
TEST_P(SetConditionTest, TransitionTimeMovesOnlyOnStatusChange) {
  std::vector<Condition> conds;
  ASSERT_TRUE(
      SetCondition(&conds, Make(kConditionRunning, ConditionStatus::kTrue, "Started"), kT0));
  const Step& step = GetParam();
  EXPECT_EQ(SetCondition(&conds, step.next, kT0 + seconds(60)), step.want_changed);
  const Condition* c = FindCondition(conds, kConditionRunning);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->last_transition_time, step.want_transition);
  EXPECT_EQ(c->status, step.next.status);
  EXPECT_EQ(c->reason, step.next.reason);
  EXPECT_EQ(c->observed_generation, step.next.observed_generation);
  EXPECT_EQ(conds.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SetConditionTest,
    ::testing::Values(
        Step{"Unchanged", Make(kConditionRunning, ConditionStatus::kTrue, "Started"), false, kT0},
        Step{"ReasonOnly", Make(kConditionRunning, ConditionStatus::kTrue, "Resumed"), true, kT0},
        Step{"GenerationOnly", Make(kConditionRunning, ConditionStatus::kTrue, "Started", 2), true,
             kT0},
        Step{"StatusFlips", Make(kConditionRunning, ConditionStatus::kFalse, "Restarting"), true,
             kT0 + seconds(60)},
        Step{"ToUnknown", Make(kConditionRunning, ConditionStatus::kUnknown, "Lost"), true,
             kT0 + seconds(60)}),
    [](const ::testing::TestParamInfo<Step>& p) { return p.param.name; });

TEST(ConditionsTest, KeepsOtherTypesAndRemoves) {
  std::vector<Condition> conds;
  ASSERT_TRUE(
      SetCondition(&conds, Make(kConditionScheduled, ConditionStatus::kTrue, "Bound"), kT0));
  ASSERT_TRUE(SetCondition(
      &conds, Make(kConditionStalled, ConditionStatus::kTrue, std::string(kReasonInvalidSpec)),
      kT0));
  EXPECT_EQ(conds.size(), 2u);
  EXPECT_TRUE(RemoveCondition(&conds, kConditionStalled));
  EXPECT_FALSE(RemoveCondition(&conds, kConditionStalled));
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].type, kConditionScheduled);
  EXPECT_EQ(FindCondition(conds, kConditionStalled), nullptr);
}

}  // namespace
}  // namespace lockstep::api
