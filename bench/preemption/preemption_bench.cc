// Preemption micro-benchmark: one ChooseVictims call on a full cluster of 5,000 nodes x 8 GPUs
// (4 blocks x 8 racks, racks interleaved by node index) running 2,000 gangs of 1-4 whole nodes
// (8 GPUs per pod), priorities 0-9 and start times at random (seed 7). The snapshot and the
// running-gang list are built once, outside the timed loop, as the cycle builds them once.
//
// Preemptors (priority 10, so all 2,000 gangs are candidates):
//   soft:     64 pods x 8 GPUs, topologyKeys [block, rack]      (about 25 victims)
//   rack:     64 pods x 8 GPUs, requiredTopologyKey rack       (the prefix runs deep: one rack
//             must be emptied of 64 nodes while victims in order are spread over every rack)
//   one:      1 pod x 8 GPUs                                    (one victim)
//   nofit:    1,300 pods x 8 GPUs, requiredTopologyKey block   (a block has 1,250 nodes: every
//   candidate
//             is tried)
// Target (issue 17): < 5 ms per call.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "operator/scheduler/preemption.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {
namespace {

constexpr int kNodes = 5000;
constexpr int kGangs = 2000;
constexpr int kRacks = 32;
constexpr int kRacksPerBlock = 8;
constexpr int64_t kGpusPerNode = 8;

Resources PodRequests() {
  return Resources{
      {std::string(kGpu), kGpusPerNode}, {"cpu", 32000}, {"memory", int64_t{256} << 30}};
}

struct Cluster {
  Snapshot snapshot;
  std::vector<RunningGang> running;
};

// Gang g takes the next 1-4 nodes in index order; the last gang takes what is left, so every
// node is full.
Cluster BuildCluster() {
  std::mt19937_64 rng(7);
  std::vector<NodeInfo> nodes;
  nodes.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    NodeInfo node;
    node.name = "gpu-node-" + std::to_string(i);
    const int rack = i % kRacks;
    node.labels[std::string(kBlockKey)] = "block-" + std::to_string(rack / kRacksPerBlock);
    node.labels[std::string(kRackKey)] = "rack-" + std::to_string(rack);
    node.allocatable = Resources{{"cpu", 96000},
                                 {"memory", int64_t{1} << 40},
                                 {std::string(kGpu), kGpusPerNode},
                                 {"pods", 110}};
    nodes.push_back(std::move(node));
  }
  std::vector<RunningGang> running;
  int next = 0;
  for (int g = 0; g < kGangs; ++g) {
    RunningGang gang;
    gang.job_key = "team/job-" + std::to_string(g);
    gang.priority = std::uniform_int_distribution<int>(0, 9)(rng);
    gang.start_time = std::chrono::system_clock::time_point(
        std::chrono::seconds(std::uniform_int_distribution<int>(0, 86400)(rng)));
    const int size = g == kGangs - 1 ? kNodes - next
                                     : std::min(kNodes - next - (kGangs - 1 - g),
                                                std::uniform_int_distribution<int>(1, 4)(rng));
    for (int k = 0; k < size; ++k, ++next) {
      AddBoundPod(nodes[static_cast<size_t>(next)], PodRequests());
      gang.pods.push_back({nodes[static_cast<size_t>(next)].name, PodRequests()});
    }
    running.push_back(std::move(gang));
  }
  return {Snapshot::Build(std::move(nodes)), std::move(running)};
}

enum Kind { kSoft = 0, kRack = 1, kOne = 2, kNoFit = 3 };

GangRequest BuildPreemptor(Kind kind) {
  GangRequest gang;
  gang.job_key = "urgent/job";
  gang.priority = 10;
  PodRequest pod;
  pod.requests = PodRequests();
  const int pods = kind == kOne ? 1 : kind == kNoFit ? 1300 : 64;
  gang.roles.push_back(Role{"worker", std::vector<PodRequest>(static_cast<size_t>(pods), pod)});
  gang.topology_keys = {std::string(kBlockKey), std::string(kRackKey)};
  if (kind == kRack) gang.required_topology_key = std::string(kRackKey);
  if (kind == kNoFit) gang.required_topology_key = std::string(kBlockKey);
  return gang;
}

void BM_ChooseVictims(benchmark::State& state) {
  static const Cluster cluster = BuildCluster();
  const auto kind = static_cast<Kind>(state.range(0));
  const GangRequest preemptor = BuildPreemptor(kind);
  size_t victims = 0;
  for (auto _ : state) {
    PreemptionPlan plan = ChooseVictims(cluster.snapshot, preemptor, cluster.running);
    victims = plan.victims.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["victims"] = static_cast<double>(victims);
  state.SetLabel(kind == kSoft ? "soft" : kind == kRack ? "rack" : kind == kOne ? "one" : "nofit");
}

BENCHMARK(BM_ChooseVictims)
    ->ArgNames({"preemptor"})
    ->DenseRange(kSoft, kNoFit)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep::scheduler

BENCHMARK_MAIN();
