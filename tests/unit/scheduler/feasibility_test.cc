#include "operator/scheduler/feasibility.h"

#include <gtest/gtest.h>

#include <cctype>
#include <ostream>

#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::GpuNode;
using testing::GpuPod;

constexpr auto kNoSchedule = TaintEffect::kNoSchedule;
constexpr auto kNoExecute = TaintEffect::kNoExecute;
constexpr auto kPrefer = TaintEffect::kPreferNoSchedule;
constexpr auto kEqual = TolerationOperator::kEqual;
constexpr auto kExists = TolerationOperator::kExists;

struct TolerationCase {
  const char* name;
  Toleration toleration;
  Taint taint;
  bool tolerated;
};

void PrintTo(const TolerationCase& c, std::ostream* os) { *os << c.name; }

class TolerationTest : public ::testing::TestWithParam<TolerationCase> {};

TEST_P(TolerationTest, MatchesKubernetes) {
  const TolerationCase& c = GetParam();
  EXPECT_EQ(ToleratesTaint(c.toleration, c.taint), c.tolerated) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Table, TolerationTest,
    ::testing::Values(
        TolerationCase{"equal same value",
                       {"gpu", kEqual, "a100", kNoSchedule},
                       {"gpu", "a100", kNoSchedule},
                       true},
        TolerationCase{"equal other value",
                       {"gpu", kEqual, "a100", kNoSchedule},
                       {"gpu", "h100", kNoSchedule},
                       false},
        TolerationCase{
            "equal empty values", {"gpu", kEqual, "", kNoSchedule}, {"gpu", "", kNoSchedule}, true},
        TolerationCase{"exists ignores value",
                       {"gpu", kExists, "", kNoSchedule},
                       {"gpu", "x", kNoSchedule},
                       true},
        TolerationCase{
            "other key", {"gpu", kExists, "", kNoSchedule}, {"ssd", "x", kNoSchedule}, false},
        TolerationCase{"empty key exists tolerates all",
                       {"", kExists, "", std::nullopt},
                       {"any", "v", kNoExecute},
                       true},
        TolerationCase{"empty key exists with effect",
                       {"", kExists, "", kNoExecute},
                       {"any", "v", kNoSchedule},
                       false},
        TolerationCase{"empty effect matches all",
                       {"gpu", kEqual, "x", std::nullopt},
                       {"gpu", "x", kNoExecute},
                       true},
        TolerationCase{
            "effect mismatch", {"gpu", kEqual, "x", kNoSchedule}, {"gpu", "x", kNoExecute}, false},
        TolerationCase{"key is case sensitive",
                       {"GPU", kExists, "", std::nullopt},
                       {"gpu", "x", kNoSchedule},
                       false}),
    [](const auto& param_info) {
      std::string name = param_info.param.name;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(TolerationTest, OnlyHardEffectsMustBeTolerated) {
  const std::vector<Taint> taints = {{"soft", "x", kPrefer}};
  EXPECT_TRUE(ToleratesTaints({}, taints));
  const std::vector<Taint> hard = {{"soft", "x", kPrefer}, {"hard", "y", kNoExecute}};
  EXPECT_FALSE(ToleratesTaints({}, hard));
  EXPECT_TRUE(ToleratesTaints({{"hard", kEqual, "y", std::nullopt}}, hard));
  // Every hard taint needs its own toleration.
  const std::vector<Taint> two = {{"a", "1", kNoSchedule}, {"b", "2", kNoSchedule}};
  EXPECT_FALSE(ToleratesTaints({{"a", kExists, "", std::nullopt}}, two));
}

struct RequirementCase {
  const char* name;
  NodeSelectorRequirement requirement;
  bool matches;  // against labels {zone: a, gen: 5}
};

void PrintTo(const RequirementCase& c, std::ostream* os) { *os << c.name; }

class RequirementTest : public ::testing::TestWithParam<RequirementCase> {};

TEST_P(RequirementTest, MatchesKubernetes) {
  const std::map<std::string, std::string> labels = {{"zone", "a"}, {"gen", "5"}};
  EXPECT_EQ(MatchesRequirement(GetParam().requirement, labels), GetParam().matches)
      << GetParam().name;
}

using Op = SelectorOperator;
INSTANTIATE_TEST_SUITE_P(
    Table, RequirementTest,
    ::testing::Values(RequirementCase{"In", {"zone", Op::kIn, {"b", "a"}}, true},
                      RequirementCase{"InMiss", {"zone", Op::kIn, {"b"}}, false},
                      RequirementCase{"InAbsent", {"rack", Op::kIn, {"a"}}, false},
                      RequirementCase{"NotIn", {"zone", Op::kNotIn, {"b"}}, true},
                      RequirementCase{"NotInHit", {"zone", Op::kNotIn, {"a"}}, false},
                      RequirementCase{"NotInAbsent", {"rack", Op::kNotIn, {"a"}}, true},
                      RequirementCase{"Exists", {"zone", Op::kExists, {}}, true},
                      RequirementCase{"ExistsAbsent", {"rack", Op::kExists, {}}, false},
                      RequirementCase{"DoesNotExist", {"rack", Op::kDoesNotExist, {}}, true},
                      RequirementCase{
                          "DoesNotExistPresent", {"zone", Op::kDoesNotExist, {}}, false},
                      RequirementCase{"Gt", {"gen", Op::kGt, {"4"}}, true},
                      RequirementCase{"GtEqual", {"gen", Op::kGt, {"5"}}, false},
                      RequirementCase{"Lt", {"gen", Op::kLt, {"6"}}, true},
                      RequirementCase{"LtEqual", {"gen", Op::kLt, {"5"}}, false},
                      RequirementCase{"GtNotNumericLabel", {"zone", Op::kGt, {"1"}}, false},
                      RequirementCase{"GtBadValue", {"gen", Op::kGt, {"x"}}, false},
                      RequirementCase{"GtTwoValues", {"gen", Op::kGt, {"1", "2"}}, false},
                      RequirementCase{"GtAbsent", {"rack", Op::kGt, {"1"}}, false},
                      RequirementCase{"GtNegative", {"gen", Op::kGt, {"-3"}}, true}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(AffinityTest, TermsOredExpressionsAnded) {
  NodeInfo node = GpuNode("n1", 8);
  node.labels = {{"zone", "a"}, {"gen", "5"}};
  const NodeSelectorTerm zone_a{{{"zone", Op::kIn, {"a"}}}, {}};
  const NodeSelectorTerm zone_b{{{"zone", Op::kIn, {"b"}}}, {}};
  const NodeSelectorTerm zone_a_old{{{"zone", Op::kIn, {"a"}}, {"gen", Op::kLt, {"3"}}}, {}};
  EXPECT_TRUE(MatchesRequiredAffinity({}, node));
  EXPECT_TRUE(MatchesRequiredAffinity({zone_a}, node));
  EXPECT_FALSE(MatchesRequiredAffinity({zone_b}, node));
  EXPECT_TRUE(MatchesRequiredAffinity({zone_b, zone_a}, node));
  EXPECT_FALSE(MatchesRequiredAffinity({zone_a_old}, node));
  EXPECT_FALSE(MatchesRequiredAffinity({NodeSelectorTerm{}}, node)) << "empty term matches none";
}

TEST(AffinityTest, MatchFieldsByNodeName) {
  const NodeInfo node = GpuNode("n1", 8);
  EXPECT_TRUE(MatchesTerm({{}, {{"metadata.name", Op::kIn, {"n1"}}}}, node));
  EXPECT_FALSE(MatchesTerm({{}, {{"metadata.name", Op::kNotIn, {"n1"}}}}, node));
  EXPECT_FALSE(MatchesTerm({{}, {{"metadata.uid", Op::kIn, {"n1"}}}}, node));
}

TEST(NodeSelectorTest, AllPairsMustMatch) {
  const std::map<std::string, std::string> labels = {{"zone", "a"}, {"gen", "5"}};
  EXPECT_TRUE(MatchesNodeSelector({}, labels));
  EXPECT_TRUE(MatchesNodeSelector({{"zone", "a"}}, labels));
  EXPECT_FALSE(MatchesNodeSelector({{"zone", "a"}, {"gen", "4"}}, labels));
  EXPECT_FALSE(MatchesNodeSelector({{"rack", "1"}}, labels));
}

TEST(CheckNodeTest, ReasonsInOrder) {
  const PodRequest pod = GpuPod(4);
  NodeInfo node = GpuNode("n1", 8);
  EXPECT_EQ(CheckNode(pod, node), Infeasibility::kNone);

  NodeInfo not_ready = node;
  not_ready.ready = false;
  not_ready.unschedulable = true;
  EXPECT_EQ(CheckNode(pod, not_ready), Infeasibility::kNotReady);

  NodeInfo cordoned = node;
  cordoned.unschedulable = true;
  EXPECT_EQ(CheckNode(pod, cordoned), Infeasibility::kUnschedulable);
  PodRequest tolerates_cordon = pod;
  tolerates_cordon.tolerations.push_back(
      {std::string(kUnschedulableTaintKey), kExists, "", kNoSchedule});
  EXPECT_EQ(CheckNode(tolerates_cordon, cordoned), Infeasibility::kNone);

  NodeInfo tainted = node;
  tainted.taints.push_back({"dedicated", "infra", kNoSchedule});
  EXPECT_EQ(CheckNode(pod, tainted), Infeasibility::kTaint);

  PodRequest selective = pod;
  selective.node_selector = {{"pool", "train"}};
  EXPECT_EQ(CheckNode(selective, node), Infeasibility::kNodeSelector);

  PodRequest affine = pod;
  affine.required_affinity = {{{{"pool", Op::kExists, {}}}, {}}};
  EXPECT_EQ(CheckNode(affine, node), Infeasibility::kAffinity);

  NodeInfo busy = node;
  AddBoundPod(busy, Resources{{std::string(kGpu), 5}});
  EXPECT_EQ(CheckNode(pod, busy), Infeasibility::kResources);
}

TEST(CheckNodeTest, ResourcesIncludingPodSlotsAndExtendedResources) {
  NodeInfo node = GpuNode("n1", 8);
  PodRequest fpga;
  fpga.requests = Resources{{"example.com/fpga", 1}};
  EXPECT_EQ(CheckNode(fpga, node), Infeasibility::kResources) << "node has no fpga";
  node.allocatable.Set("example.com/fpga", 1);
  EXPECT_EQ(CheckNode(fpga, node), Infeasibility::kNone);
  node.allocatable.Set("pods", 1);
  AddBoundPod(node, Resources{});
  EXPECT_EQ(CheckNode(fpga, node), Infeasibility::kResources) << "no pod slot left";
}

}  // namespace
}  // namespace lockstep::scheduler
