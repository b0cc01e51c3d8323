// DecideCreatePlacement: when a gang about to be created may be created already placed, and
// where; every row states the binding path's decision it must agree with.
#include "operator/scheduler/create_placement.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::Cluster;
using testing::Gang;
using testing::GpuNode;

GangRequest Job(std::string key, int pods, int64_t gpus, int32_t priority) {
  GangRequest gang = Gang(std::move(key), pods, gpus);
  gang.priority = priority;
  return gang;
}

struct Row {
  std::string name;
  std::vector<NodeInfo> nodes;
  GangRequest gang;
  std::vector<GangRequest> waiting;
  std::optional<HeldCapacity> held;
  CreatePlacementOutcome want;
  std::set<std::string> allowed_nodes;  // kPlace: every pod on one of these (empty: any)
};

std::vector<Row> Rows() {
  std::vector<Row> rows;
  rows.push_back({"fits on an empty cluster", Cluster(1, 1, 4, 8), Job("ns/a", 4, 8, 0), {}, {},
                  CreatePlacementOutcome::kPlace, {}});
  rows.push_back({"does not fit: falls back, never preempts", Cluster(1, 1, 2, 8),
                  Job("ns/a", 3, 8, 100), {}, {}, CreatePlacementOutcome::kDoesNotFit, {}});
  rows.push_back({"a waiting gang of higher priority goes first", Cluster(1, 1, 4, 8),
                  Job("ns/a", 1, 8, 0), {Job("ns/w", 8, 8, 10)}, {},
                  CreatePlacementOutcome::kQueuedAhead, {}});
  rows.push_back({"a waiting gang of equal priority goes first", Cluster(1, 1, 4, 8),
                  Job("ns/a", 1, 8, 5), {Job("ns/w", 8, 8, 5)}, {},
                  CreatePlacementOutcome::kQueuedAhead, {}});
  rows.push_back({"a waiting gang of lower priority does not hold it back", Cluster(1, 1, 4, 8),
                  Job("ns/a", 2, 8, 5), {Job("ns/w", 8, 8, 1)}, {},
                  CreatePlacementOutcome::kPlace, {}});
  {
    // Only n0 and n1 are free; n2 and n3 are full.
    std::vector<NodeInfo> nodes = {GpuNode("n0", 8), GpuNode("n1", 8), GpuNode("n2", 8, "", "", 8),
                                   GpuNode("n3", 8, "", "", 8)};
    rows.push_back({"bound pods count: only free nodes", nodes, Job("ns/a", 2, 8, 0), {}, {},
                    CreatePlacementOutcome::kPlace, {"n0", "n1"}});
  }
  {
    GangRequest gang = Job("ns/a", 2, 8, 0);
    gang.excluded_nodes = {"b0-r0-n0", "b0-r0-n1"};
    rows.push_back({"excluded nodes are never chosen", Cluster(1, 1, 4, 8), gang, {}, {},
                    CreatePlacementOutcome::kPlace, {"b0-r0-n2", "b0-r0-n3"}});
  }
  {
    GangRequest gang = Job("ns/a", 3, 8, 0);
    gang.required_topology_key = std::string(kRackKey);
    rows.push_back({"a required topology key no domain satisfies", Cluster(1, 2, 2, 8), gang, {},
                    {}, CreatePlacementOutcome::kDoesNotFit, {}});
  }
  {
    // A lower-priority preemptor waits with capacity held on n0..n1; this gang, higher, is
    // walked first in the binding path too, and may take it.
    HeldCapacity held{"ns/w", {{"b0-r0-n0", {{std::string(kGpu), 8}}}}, "it preempted ns/v"};
    rows.push_back({"held capacity of a lower-priority holder", Cluster(1, 1, 2, 8),
                    Job("ns/a", 2, 8, 5), {Job("ns/w", 2, 8, 1)}, held,
                    CreatePlacementOutcome::kPlace, {}});
  }
  return rows;
}

TEST(DecideCreatePlacementTest, Table) {
  const auto now = std::chrono::steady_clock::time_point(std::chrono::seconds(1000));
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    std::vector<PendingGang> waiting;
    for (const GangRequest& w : row.waiting) waiting.push_back({&w, now});
    CycleOptions options;
    options.held = row.held;
    const Snapshot snapshot = Snapshot::Build(row.nodes);
    const CreatePlacementDecision d = DecideCreatePlacement(snapshot, row.gang, waiting, now,
                                                            options);
    EXPECT_EQ(d.outcome, row.want) << d.reason;
    if (row.want != CreatePlacementOutcome::kPlace) {
      EXPECT_FALSE(d.reason.empty());
      EXPECT_TRUE(d.placement.assignments.empty());
      continue;
    }
    ASSERT_EQ(d.placement.assignments.size(), row.gang.PodCount());
    // The binding path's placement for the gang alone on the same snapshot: the same nodes.
    const Placement alone = PlaceGang(snapshot, row.gang);
    ASSERT_TRUE(alone.placed());
    std::map<std::string, int64_t> gpus;
    for (size_t i = 0; i < d.placement.assignments.size(); ++i) {
      const PodAssignment& a = d.placement.assignments[i];
      EXPECT_EQ(a.node_name, alone.assignments[i].node_name);
      if (!row.allowed_nodes.empty()) {
        EXPECT_EQ(row.allowed_nodes.count(a.node_name), 1u);
      }
      gpus[a.node_name] += 8;
    }
    for (const auto& [node, used] : gpus) EXPECT_LE(used, 8) << node;  // never double-booked
  }
}

TEST(PlacedRequestHoldsTest, Table) {
  PodRequest placed = testing::GpuPod(8);
  placed.node_selector = {{"pool", "a"}};
  placed.tolerations = {{"gpu", TolerationOperator::kExists, "", TaintEffect::kNoSchedule}};
  struct Case {
    std::string name;
    std::function<void(PodRequest&)> change;
    bool holds;
  };
  const std::vector<Case> cases = {
      {"stored as placed", [](PodRequest&) {}, true},
      {"a toleration added (DefaultTolerationSeconds)",
       [](PodRequest& p) {
         p.tolerations.push_back({"node.kubernetes.io/not-ready", TolerationOperator::kExists, "",
                                  TaintEffect::kNoExecute});
       },
       true},
      {"less cpu", [](PodRequest& p) { p.requests.Set("cpu", 500); }, true},
      {"more gpus (a LimitRange default, a webhook)",
       [](PodRequest& p) { p.requests.Set(kGpu, 16); }, false},
      {"a new resource", [](PodRequest& p) { p.requests.Set("memory", 1 << 20); }, false},
      {"a nodeSelector added", [](PodRequest& p) { p.node_selector["zone"] = "z1"; }, false},
      {"required affinity added",
       [](PodRequest& p) { p.required_affinity.push_back(NodeSelectorTerm{}); }, false},
      {"a toleration removed", [](PodRequest& p) { p.tolerations.clear(); }, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PodRequest stored = placed;
    c.change(stored);
    EXPECT_EQ(PlacedRequestHolds(placed, stored), c.holds);
  }
}

TEST(DecideCreatePlacementTest, OutcomeNames) {
  EXPECT_EQ(CreatePlacementOutcomeName(CreatePlacementOutcome::kPlace), "place");
  EXPECT_EQ(CreatePlacementOutcomeName(CreatePlacementOutcome::kQueuedAhead), "queued_ahead");
  EXPECT_EQ(CreatePlacementOutcomeName(CreatePlacementOutcome::kDoesNotFit), "does_not_fit");
}

}  // namespace
}  // namespace lockstep::scheduler
