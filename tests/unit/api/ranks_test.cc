#include "operator/api/ranks.h"

#include <gtest/gtest.h>

#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

std::vector<std::string> Order(const TrainingJobSpec& spec, int32_t workers) {
  std::vector<std::string> out;
  int32_t expected_rank = 0;
  for (const PodSlot& slot : PodSlots(spec, workers)) {
    EXPECT_EQ(slot.node_rank, expected_rank++);
    out.push_back(slot.role + "-" + std::to_string(slot.index));
  }
  return out;
}

Role MakeRole(std::string name, int32_t replicas) {
  return Role{std::move(name), replicas, std::nullopt, testing::MinimalJob().spec.pod_template};
}

struct Case {
  std::string name;
  std::vector<std::pair<std::string, int32_t>> roles;  // in spec order
  int32_t workers;
  std::vector<std::string> want;
};

class PodSlotsTest : public ::testing::TestWithParam<Case> {};

TEST_P(PodSlotsTest, LeadersThenWorkersThenOthers) {
  TrainingJobSpec spec = testing::MinimalJob().spec;
  for (const auto& [name, n] : GetParam().roles) spec.roles.push_back(MakeRole(name, n));
  EXPECT_EQ(Order(spec, GetParam().workers), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PodSlotsTest,
    ::testing::Values(Case{"WorkersOnly", {}, 3, {"worker-0", "worker-1", "worker-2"}},
                      Case{"TensorFlowPs",
                           {{"ps", 2}, {"chief", 1}, {"evaluator", 1}},
                           2,
                           {"chief-0", "worker-0", "worker-1", "ps-0", "ps-1", "evaluator-0"}},
                      Case{"RayHeadNoWorkers", {{"head", 1}}, 0, {"head-0"}},
                      Case{"TwoLeadersKeepSpecOrder",
                           {{"master", 1}, {"coordinator", 1}},
                           1,
                           {"master-0", "coordinator-0", "worker-0"}}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(PodRanksTest, SlotsCarryProcsAndTemplate) {
  TrainingJobSpec spec = testing::MinimalJob().spec;
  spec.procs_per_pod = 8;
  spec.roles.push_back(MakeRole("ps", 1));
  const std::vector<PodSlot> slots = PodSlots(spec, 1);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].procs_per_pod, 8);
  EXPECT_EQ(slots[0].pod_template, &spec.pod_template);
  EXPECT_EQ(slots[1].procs_per_pod, 1);
  EXPECT_EQ(slots[1].pod_template, &spec.roles[0].pod_template);
}

TEST(PodRanksTest, PodName) { EXPECT_EQ(PodName("resnet", "worker", 12), "resnet-worker-12"); }

}  // namespace
}  // namespace lockstep::api
