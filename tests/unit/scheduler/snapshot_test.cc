#include "operator/scheduler/snapshot.h"

#include <gtest/gtest.h>

#include "operator/scheduler/fragmentation.h"
#include "operator/scheduler/resources.h"
#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::GpuNode;

TEST(ResourcesTest, SortedMapWithoutZeros) {
  Resources r{{"memory", 5}, {"cpu", 2}};
  EXPECT_EQ(r.Get("cpu"), 2);
  EXPECT_EQ(r.Get("nvidia.com/gpu"), 0);
  r.Add("cpu", -2);
  EXPECT_EQ(r, (Resources{{"memory", 5}}));
  r += Resources{{"nvidia.com/gpu", 8}, {"memory", 1}};
  EXPECT_EQ(r.ToString(), "memory=6, nvidia.com/gpu=8");
}

TEST(ResourcesTest, ParsesResourceLists) {
  StatusOr<Resources> r =
      ParseResourceList({{"cpu", "500m"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "8"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (Resources{{"cpu", 500}, {"memory", int64_t{2} << 30}, {"nvidia.com/gpu", 8}}));
  EXPECT_FALSE(ParseResourceList({{"cpu", "lots"}}).ok());
}

TEST(SnapshotTest, SortsByNameAndIndexesDomains) {
  const Snapshot snap = Snapshot::Build(
      {GpuNode("z", 8, "b1", "r9"), GpuNode("a", 4, "b0", "r1"), GpuNode("m", 8, "", "r1")});
  ASSERT_EQ(snap.size(), 3u);
  EXPECT_EQ(snap.node(0).name, "a");
  EXPECT_EQ(snap.node(2).name, "z");
  EXPECT_EQ(*snap.Find("m"), 1u);
  EXPECT_FALSE(snap.Find("q").has_value());
  const DomainIndex* blocks = snap.Domains(kBlockKey);
  ASSERT_NE(blocks, nullptr);
  EXPECT_EQ(blocks->values, (std::vector<std::string>{"b0", "b1"}));
  EXPECT_EQ(blocks->of_node, (std::vector<int32_t>{0, DomainIndex::kUnlabeled, 1}));
  EXPECT_EQ(snap.Domains("zone"), nullptr);
  EXPECT_EQ(snap.BuildDomainIndex(kRackKey).values, (std::vector<std::string>{"r1", "r9"}));
}

TEST(SnapshotTest, FreeCountsBoundPodsAndAssumeIsPerCopy) {
  NodeInfo node = GpuNode("n", 8, "", "", 3);
  Snapshot snap = Snapshot::Build({node});
  const ResourceId gpu = *snap.FindResource(kGpu);
  const ResourceId pods = *snap.FindResource(kPods);
  EXPECT_EQ(snap.Free(0, gpu), 5);
  EXPECT_EQ(snap.Free(0, pods), 109);
  Snapshot copy = snap;
  copy.Assume(0, Resources{{std::string(kGpu), 4}, {"example.com/unknown", 1}});
  EXPECT_EQ(copy.Free(0, gpu), 1);
  EXPECT_EQ(copy.Free(0, pods), 108);
  EXPECT_EQ(snap.Free(0, gpu), 5) << "the original is untouched";
  EXPECT_EQ(copy.Requested(0).Get(kGpu), 7);
}

TEST(FragmentationTest, MostCommonRequest) {
  EXPECT_EQ(MostCommonGpuRequest({}), 0);
  EXPECT_EQ(MostCommonGpuRequest({0, 0}), 0);
  EXPECT_EQ(MostCommonGpuRequest({8, 8, 1, 1, 1}), 1);
  EXPECT_EQ(MostCommonGpuRequest({4, 4, 8, 8}), 8) << "ties go to the larger request";
}

TEST(FragmentationTest, CountsFreeGpusThatCannotFitTheCommonRequest) {
  NodeInfo cordoned = GpuNode("cordoned", 8, "", "", 5);
  cordoned.unschedulable = true;
  const Snapshot snap =
      Snapshot::Build({GpuNode("full", 8, "", "", 8), GpuNode("three", 8, "", "", 5),
                       GpuNode("empty", 8), GpuNode("six", 8, "", "", 2), cordoned});
  EXPECT_EQ(FragmentedGpus(snap, 8), 3 + 6);
  EXPECT_EQ(FragmentedGpus(snap, 4), 3);
  EXPECT_EQ(FragmentedGpus(snap, 1), 0);
  EXPECT_EQ(FragmentedGpus(snap, 0), 0);
  const GpuTotals totals = CountGpus(snap);
  EXPECT_EQ(totals.allocatable, 40);
  EXPECT_EQ(totals.allocated, 8 + 5 + 0 + 2 + 5);
}

}  // namespace
}  // namespace lockstep::scheduler
