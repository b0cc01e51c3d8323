// Property test for ChooseVictims: thousands of random clusters with running gangs and a random
// preemptor (seeded, reproducible). Every answer must be whole gangs of strictly lower priority,
// make the preemptor fit, be minimal (no victim can be put back and the preemptor still fit),
// evict a higher-priority gang only when the strictly lower ones together cannot make room, and
// be empty exactly when evicting every candidate would not make room (or the policy is Never).

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "operator/scheduler/placement.h"
#include "operator/scheduler/preemption.h"
#include "tests/unit/scheduler/preemption_builders.h"
#include "tests/unit/scheduler/seeded_random.h"

namespace lockstep::scheduler {
namespace {

using ::lockstep::scheduler::testing::Random;

struct Case {
  std::vector<NodeInfo> nodes;
  std::vector<RunningGang> running;
  GangRequest preemptor;
};

// Nodes of 0-8 GPUs in 2 blocks; running gangs of 1-4 pods placed where their GPUs are free, so
// the snapshot counts exactly what the gangs hold (plus some pods of other schedulers).
Case RandomCase(Random& rnd) {
  Case c;
  const int node_count = rnd.Int(2, 10);
  std::vector<int64_t> free;
  for (int i = 0; i < node_count; ++i) {
    const int64_t gpus = std::vector<int64_t>{0, 4, 8, 8}[static_cast<size_t>(rnd.Int(0, 3))];
    NodeInfo node = testing::GpuNode("n" + std::to_string(i), gpus, "b" + std::to_string(i % 2));
    node.ready = rnd.Chance(0.95);
    int64_t used = 0;
    if (gpus > 0 && rnd.Chance(0.2)) {  // another scheduler's pod, never a victim
      used = rnd.Int(1, static_cast<int>(gpus));
      AddBoundPod(node, testing::GpuPod(used).requests);
    }
    free.push_back(gpus - used);
    c.nodes.push_back(std::move(node));
  }
  for (int g = rnd.Int(0, 8); g > 0; --g) {
    RunningGang gang;
    gang.job_key = "ns/g" + std::to_string(c.running.size());
    gang.priority = rnd.Int(0, 5);
    gang.start_time = std::chrono::system_clock::time_point(std::chrono::seconds(rnd.Int(0, 20)));
    const int64_t gpus = std::vector<int64_t>{1, 2, 4, 8}[static_cast<size_t>(rnd.Int(0, 3))];
    for (int p = rnd.Int(1, 4); p > 0; --p) {
      const int n = rnd.Int(0, node_count - 1);
      if (free[static_cast<size_t>(n)] < gpus) continue;
      free[static_cast<size_t>(n)] -= gpus;
      const Resources requests = testing::GpuPod(gpus).requests;
      AddBoundPod(c.nodes[static_cast<size_t>(n)], requests);
      gang.pods.push_back({c.nodes[static_cast<size_t>(n)].name, requests});
    }
    if (!gang.pods.empty()) c.running.push_back(std::move(gang));
  }
  c.preemptor = testing::Preemptor(
      rnd.Int(1, 4), std::vector<int64_t>{1, 2, 4, 8}[static_cast<size_t>(rnd.Int(0, 3))],
      rnd.Int(0, 6));
  if (rnd.Chance(0.3)) c.preemptor.required_topology_key = std::string(kBlockKey);
  if (rnd.Chance(0.3)) c.preemptor.topology_keys = {std::string(kBlockKey)};
  if (rnd.Chance(0.1)) c.preemptor.preemption_policy = PreemptionPolicy::kNever;
  return c;
}

bool FitsWithout(const Snapshot& s, const Case& c, const std::vector<size_t>& evicted) {
  return PlaceGang(WithoutGangs(s, c.running, evicted), c.preemptor).placed();
}

TEST(ChooseVictimsProperty, RandomClusters) {
  int with_victims = 0;
  int topology_with_victims = 0;
  for (uint64_t seed = 1; seed <= 4000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Random rnd(seed);
    const Case c = RandomCase(rnd);
    const Snapshot snapshot = Snapshot::Build(c.nodes);
    const PreemptionPlan plan = ChooseVictims(snapshot, c.preemptor, c.running);

    std::vector<size_t> lower;
    for (size_t i = 0; i < c.running.size(); ++i) {
      if (c.running[i].priority < c.preemptor.priority) lower.push_back(i);
    }
    const bool fits_now = PlaceGang(snapshot, c.preemptor).placed();
    if (plan.victims.empty()) {
      EXPECT_FALSE(plan.message.empty());
      if (c.preemptor.preemption_policy == PreemptionPolicy::kPreemptLowerPriority && !fits_now) {
        EXPECT_FALSE(FitsWithout(snapshot, c, lower)) << "a fitting eviction set was missed";
      }
      continue;
    }
    ++with_victims;
    if (!c.preemptor.required_topology_key.empty()) ++topology_with_victims;
    ASSERT_EQ(c.preemptor.preemption_policy, PreemptionPolicy::kPreemptLowerPriority);
    ASSERT_FALSE(fits_now) << "evicted although it fit";
    // Whole, distinct gangs, strictly lower priority.
    std::set<size_t> distinct(plan.victims.begin(), plan.victims.end());
    ASSERT_EQ(distinct.size(), plan.victims.size());
    int32_t highest_victim = INT32_MIN;
    for (size_t v : plan.victims) {
      ASSERT_LT(v, c.running.size());
      EXPECT_LT(c.running[v].priority, c.preemptor.priority);
      highest_victim = std::max(highest_victim, c.running[v].priority);
    }
    // The preemptor fits once they are gone, where the plan says.
    EXPECT_TRUE(plan.placement.placed());
    EXPECT_TRUE(FitsWithout(snapshot, c, plan.victims));
    // Minimal: putting back any one victim leaves the preemptor without room.
    for (size_t k = 0; k < plan.victims.size(); ++k) {
      std::vector<size_t> fewer = plan.victims;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
      EXPECT_FALSE(FitsWithout(snapshot, c, fewer))
          << "victim " << c.running[plan.victims[k]].job_key << " was not needed";
    }
    // Priority order: the gangs of strictly lower priority than the most important victim could
    // not have made room by themselves.
    std::vector<size_t> cheaper;
    for (size_t i : lower) {
      if (c.running[i].priority < highest_victim) cheaper.push_back(i);
    }
    EXPECT_FALSE(FitsWithout(snapshot, c, cheaper))
        << "evicted priority " << highest_victim << " though lower ones would do";
  }
  // The generator must exercise the interesting cases, or the test proves nothing.
  EXPECT_GT(with_victims, 400);
  EXPECT_GT(topology_with_victims, 50);
}

}  // namespace
}  // namespace lockstep::scheduler
