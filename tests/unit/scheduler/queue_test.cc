#include "operator/scheduler/queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "operator/scheduler/feasibility.h"
#include "operator/scheduler/fragmentation.h"
#include "tests/testing/fake_clock.h"
#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using std::chrono::seconds;
using testing::Cluster;
using testing::Gang;
using ::testing::HasSubstr;

using ::lockstep::testing::FakeClock;

GangRequest Job(std::string key, int pods, int64_t gpus, int32_t priority, int created_at) {
  GangRequest gang = Gang(std::move(key), pods, gpus);
  gang.priority = priority;
  gang.creation_time = std::chrono::system_clock::time_point(seconds(created_at));
  return gang;
}

std::vector<std::string> Keys(const CyclePlan& plan) {
  std::vector<std::string> out;
  for (const GangDecision& d : plan.decisions) out.push_back(d.gang->job_key);
  return out;
}

TEST(QueueOrderTest, PriorityThenCreationThenKey) {
  const GangRequest low_old = Job("ns/low-old", 1, 1, 0, 1);
  const GangRequest high_new = Job("ns/high-new", 1, 1, 10, 50);
  const GangRequest low_new_b = Job("ns/b", 1, 1, 0, 20);
  const GangRequest low_new_a = Job("ns/a", 1, 1, 0, 20);
  EXPECT_TRUE(QueueBefore(high_new, low_old));
  EXPECT_TRUE(QueueBefore(low_old, low_new_a));
  EXPECT_TRUE(QueueBefore(low_new_a, low_new_b));
  EXPECT_FALSE(QueueBefore(low_new_a, low_new_a));
  FakeClock clock;
  const CyclePlan plan = PlanCycle(Snapshot::Build(Cluster(1, 1, 4, 8)),
                                   {{&low_new_b, clock.Now()},
                                    {&low_old, clock.Now()},
                                    {&high_new, clock.Now()},
                                    {&low_new_a, clock.Now()}},
                                   clock.Now());
  EXPECT_EQ(Keys(plan), (std::vector<std::string>{"ns/high-new", "ns/low-old", "ns/a", "ns/b"}));
}

TEST(PlanCycleTest, SeveralGangsPerCycleNeverOverlap) {
  const GangRequest a = Job("ns/a", 2, 8, 0, 1);
  const GangRequest b = Job("ns/b", 2, 8, 0, 2);
  const GangRequest c = Job("ns/c", 1, 8, 0, 3);
  FakeClock clock;
  const CyclePlan plan =
      PlanCycle(Snapshot::Build(Cluster(1, 1, 4, 8)),
                {{&a, clock.Now()}, {&b, clock.Now()}, {&c, clock.Now()}}, clock.Now());
  ASSERT_EQ(plan.decisions.size(), 3u);
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kPlaced);
  EXPECT_EQ(plan.decisions[2].outcome, Outcome::kWaiting);
  EXPECT_EQ(plan.decisions[2].placement.message,
            "needs 8 nvidia.com/gpu; 0 free on schedulable nodes");
  std::set<std::string> used;
  for (int i = 0; i < 2; ++i) {
    for (const PodAssignment& p : plan.decisions[static_cast<size_t>(i)].placement.assignments) {
      EXPECT_TRUE(used.insert(p.node_name).second) << p.node_name << " used twice";
    }
  }
  EXPECT_EQ(CountGpus(plan.assumed).allocated, 32);
}

// 4 nodes x 8 GPUs, one busy (a long job holds it). The head needs all 4 nodes; small jobs keep
// arriving behind it.
struct ReservationFixture : ::testing::Test {
  ReservationFixture() {
    std::vector<NodeInfo> nodes = Cluster(1, 1, 4, 8);
    AddBoundPod(nodes[0], Resources{{std::string(kGpu), 8}});
    snap = Snapshot::Build(nodes);
  }
  Snapshot snap = Snapshot::Build({});
  FakeClock clock;
  const GangRequest head = Job("ns/big", 4, 8, 0, 1);
  const GangRequest small = Job("ns/small", 1, 8, 0, 2);
};

TEST_F(ReservationFixture, SmallJobsBackfillBeforeTheBound) {
  const auto queued = clock.Now();
  clock.Advance(seconds(59));
  const CyclePlan plan = PlanCycle(snap, {{&head, queued}, {&small, clock.Now()}}, clock.Now());
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kWaiting);
  EXPECT_EQ(plan.decisions[0].placement.message,
            "needs 32 nvidia.com/gpu; 24 free on schedulable nodes");
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kPlaced) << "backfill";
}

TEST_F(ReservationFixture, AfterTheBoundCapacityIsHeldForTheHead) {
  const auto queued = clock.Now();
  clock.Advance(seconds(60));
  const CyclePlan plan = PlanCycle(snap, {{&head, queued}, {&small, clock.Now()}}, clock.Now());
  ASSERT_EQ(plan.decisions[0].outcome, Outcome::kReserved);
  EXPECT_EQ(plan.decisions[0].reserved_nodes.size(), 4u);
  EXPECT_THAT(plan.decisions[0].placement.message,
              HasSubstr("; waited 60s, capacity reserved on 4 nodes"));
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kBlockedByReservation);
  EXPECT_THAT(plan.decisions[1].placement.message, HasSubstr("capacity is held for ns/big"));
  EXPECT_TRUE(plan.decisions[1].placement.assignments.empty());
}

TEST_F(ReservationFixture, BoundIsConfigurable) {
  const auto queued = clock.Now();
  clock.Advance(seconds(10));
  CycleOptions options;
  options.reserve_after = seconds(5);
  const CyclePlan plan =
      PlanCycle(snap, {{&head, queued}, {&small, clock.Now()}}, clock.Now(), options);
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kReserved);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kBlockedByReservation);
}

TEST_F(ReservationFixture, HeldCapacityTheHeadDoesNotNeedStaysUsable) {
  const GangRequest head3 = Job("ns/big3", 3, 6, 0, 1);  // three 6-GPU pods
  const GangRequest tiny = Job("ns/tiny", 1, 2, 0, 2);
  const GangRequest medium = Job("ns/medium", 1, 4, 0, 3);
  std::vector<NodeInfo> nodes = Cluster(1, 1, 4, 8);
  AddBoundPod(nodes[0], Resources{{std::string(kGpu), 8}});
  AddBoundPod(nodes[1], Resources{{std::string(kGpu), 6}});
  const Snapshot busy = Snapshot::Build(nodes);  // free: 0, 2, 8, 8 -> only two 6-GPU pods fit
  const auto queued = clock.Now();
  clock.Advance(seconds(61));
  const CyclePlan plan = PlanCycle(
      busy, {{&head3, queued}, {&tiny, clock.Now()}, {&medium, clock.Now()}}, clock.Now());
  ASSERT_EQ(plan.decisions[0].outcome, Outcome::kReserved);
  // The reservation takes the nodes freest now: n2, n3, then n1; n0 stays outside it.
  EXPECT_EQ(plan.decisions[0].reserved_nodes,
            (std::vector<std::string>{"b0-r0-n1", "b0-r0-n2", "b0-r0-n3"}));
  // n2 and n3 keep 2 GPUs the head does not need: the tiny job may use them, the medium not.
  ASSERT_EQ(plan.decisions[1].outcome, Outcome::kPlaced);
  EXPECT_NE(plan.decisions[1].placement.assignments[0].node_name, "b0-r0-n1");
  EXPECT_EQ(plan.decisions[2].outcome, Outcome::kBlockedByReservation);
}

TEST_F(ReservationFixture, GangThatCanNeverFitReservesNothing) {
  const GangRequest huge = Job("ns/huge", 5, 8, 0, 1);  // more than the cluster has
  const auto queued = clock.Now();
  clock.Advance(seconds(3600));
  const CyclePlan plan = PlanCycle(snap, {{&huge, queued}, {&small, clock.Now()}}, clock.Now());
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kWaiting);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kPlaced);
}

TEST_F(ReservationFixture, HigherPriorityStillGoesFirst) {
  const GangRequest urgent = Job("ns/urgent", 1, 8, 100, 50);
  const auto queued = clock.Now();
  clock.Advance(seconds(120));
  const CyclePlan plan = PlanCycle(snap, {{&head, queued}, {&urgent, clock.Now()}}, clock.Now());
  EXPECT_EQ(Keys(plan), (std::vector<std::string>{"ns/urgent", "ns/big"}));
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kReserved);
}

TEST_F(ReservationFixture, OnlyOneReservationPerCycle) {
  const GangRequest second_big = Job("ns/big2", 4, 8, 0, 1);
  const auto queued = clock.Now();
  clock.Advance(seconds(120));
  const CyclePlan plan =
      PlanCycle(snap, {{&head, queued}, {&second_big, queued}, {&small, queued}}, clock.Now());
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kReserved);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kWaiting);
  EXPECT_EQ(plan.decisions[2].outcome, Outcome::kBlockedByReservation);
}

TEST_F(ReservationFixture, HeadRunsOnceCapacityFrees) {
  const auto queued = clock.Now();
  clock.Advance(seconds(300));
  const CyclePlan plan = PlanCycle(Snapshot::Build(Cluster(1, 1, 4, 8)),
                                   {{&head, queued}, {&small, clock.Now()}}, clock.Now());
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kWaiting);
}

// Random queues on random clusters: the placed gangs of one cycle never share capacity, a
// blocked gang would have fit without the hold, and at most one gang reserves.
TEST(PlanCyclePropertyTest, PlacedGangsNeverOverlap) {
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    std::mt19937_64 rng(seed);
    auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<NodeInfo> nodes = Cluster(rnd(1, 2), rnd(1, 2), rnd(1, 3), 8);
    for (NodeInfo& n : nodes) AddBoundPod(n, Resources{{std::string(kGpu), rnd(0, 8)}});
    const Snapshot snap = Snapshot::Build(nodes);
    std::vector<GangRequest> gangs;
    for (int g = rnd(1, 6); g > 0; --g) {
      gangs.push_back(
          Job("ns/g" + std::to_string(g), rnd(1, 4), 1 << rnd(0, 3), rnd(0, 1), rnd(0, 9)));
    }
    FakeClock clock;
    std::vector<PendingGang> pending;
    for (const GangRequest& g : gangs) pending.push_back({&g, clock.Now() - seconds(rnd(0, 120))});
    const CyclePlan plan = PlanCycle(snap, pending, clock.Now());
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::map<std::string, NodeInfo> after;
    for (const NodeInfo& n : nodes) after[n.name] = n;
    int reservations = 0;
    for (const GangDecision& d : plan.decisions) {
      if (d.outcome == Outcome::kReserved) ++reservations;
      if (d.outcome == Outcome::kBlockedByReservation) {
        EXPECT_TRUE(PlaceGang(snap, *d.gang).placed()) << "blocked, yet it never fit";
      }
      if (d.outcome != Outcome::kPlaced) {
        EXPECT_TRUE(d.placement.assignments.empty());
        continue;
      }
      ASSERT_EQ(d.placement.assignments.size(), d.gang->PodCount());
      for (const PodAssignment& a : d.placement.assignments) {
        const PodRequest& pod = d.gang->roles[a.role].pods[a.replica];
        NodeInfo& node = after[a.node_name];
        EXPECT_EQ(CheckNode(pod, node), Infeasibility::kNone) << "overlap on " << a.node_name;
        AddBoundPod(node, pod.requests);
      }
    }
    EXPECT_LE(reservations, 1);
    if (HasFailure()) break;
  }
}

// Held capacity (preemption): while the victims terminate, what they already freed is the
// preemptor's; a lower-priority gang that would fit there waits behind it.
class HeldCapacityFixture : public ::testing::Test {
 protected:
  // Four 8-GPU nodes: n0 freed by a victim, n1 still held by a terminating victim pod, n2 and n3
  // full of other work.
  Snapshot Build() const {
    std::vector<NodeInfo> nodes = Cluster(1, 1, 4, 8);
    for (size_t i = 1; i < 4; ++i) AddBoundPod(nodes[i], testing::GpuPod(8).requests);
    return Snapshot::Build(std::move(nodes));
  }
  HeldCapacity Held() const {
    return {"ns/preemptor",
            {{"b0-r0-n0", testing::GpuPod(8).requests}, {"b0-r0-n1", testing::GpuPod(8).requests}},
            "it preempted ns/victim"};
  }
  FakeClock clock;
  const GangRequest preemptor = Job("ns/preemptor", 2, 8, 100, 10);
  const GangRequest low = Job("ns/low", 1, 8, 0, 1);
};

TEST_F(HeldCapacityFixture, LowerGangDoesNotTakeTheFreedCapacity) {
  CycleOptions options;
  options.held = Held();
  const CyclePlan plan =
      PlanCycle(Build(), {{&low, clock.Now()}, {&preemptor, clock.Now()}}, clock.Now(), options);
  ASSERT_EQ(Keys(plan), (std::vector<std::string>{"ns/preemptor", "ns/low"}));
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kReserved);
  EXPECT_EQ(plan.decisions[0].reserved_nodes, (std::vector<std::string>{"b0-r0-n0", "b0-r0-n1"}));
  EXPECT_THAT(plan.decisions[0].placement.message, HasSubstr("it preempted ns/victim"));
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kBlockedByReservation);
  EXPECT_THAT(plan.decisions[1].placement.message, HasSubstr("held for ns/preemptor"));
}

TEST_F(HeldCapacityFixture, WithoutTheHoldTheLowerGangWouldStartThere) {
  const CyclePlan plan =
      PlanCycle(Build(), {{&low, clock.Now()}, {&preemptor, clock.Now()}}, clock.Now());
  ASSERT_EQ(plan.decisions.size(), 2u);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kPlaced);
}

TEST_F(HeldCapacityFixture, HolderThatFitsIsPlaced) {
  std::vector<NodeInfo> nodes = Cluster(1, 1, 4, 8);
  AddBoundPod(nodes[3], testing::GpuPod(8).requests);
  CycleOptions options;
  options.held = Held();
  const CyclePlan plan =
      PlanCycle(Snapshot::Build(std::move(nodes)), {{&low, clock.Now()}, {&preemptor, clock.Now()}},
                clock.Now(), options);
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(plan.decisions[1].outcome, Outcome::kPlaced);  // n2 was never the victims'
}

TEST_F(HeldCapacityFixture, HoldForAGangNotPendingHoldsNothing) {
  CycleOptions options;
  options.held = Held();
  const CyclePlan plan = PlanCycle(Build(), {{&low, clock.Now()}}, clock.Now(), options);
  EXPECT_EQ(plan.decisions[0].outcome, Outcome::kPlaced);
}

}  // namespace
}  // namespace lockstep::scheduler
