// Placement micro-benchmark: one PlaceGang call for a gang of N pods x 8 GPUs on a cluster of
// nodes x 8 GPUs in 4 blocks x 8 racks, half the GPUs in use. The snapshot is built once, outside
// the timed loop, as the scheduling cycle builds it once per cycle.
//
// Fill patterns ("half full" two ways):
//   mixed: each node has 0..8 GPUs in use, uniformly (seeded), so free capacity is fragmented
//          and a 64-pod gang spans several racks;
//   whole: half the nodes (at random) fully used, the rest empty.
//
// The named ceiling: kube-scheduler's CI floor of 680 pods/s, about 94 ms per 64 pods.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "operator/scheduler/placement.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {
namespace {

constexpr int kBlocks = 4;
constexpr int kRacksPerBlock = 8;
constexpr int64_t kGpusPerNode = 8;
constexpr double kKubeSchedulerPodsPerSecond = 680;

enum Fill { kMixed = 0, kWhole = 1 };

Snapshot BuildCluster(int node_count, Fill fill) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> used_gpus(0, kGpusPerNode);
  std::bernoulli_distribution full(0.5);
  std::vector<NodeInfo> nodes;
  nodes.reserve(static_cast<size_t>(node_count));
  const int racks = kBlocks * kRacksPerBlock;
  for (int i = 0; i < node_count; ++i) {
    const int rack = i % racks;  // spread evenly: ~156 nodes per rack at 5,000 nodes
    NodeInfo node;
    node.name = "gpu-node-" + std::to_string(i);
    node.labels[std::string(kBlockKey)] = "block-" + std::to_string(rack / kRacksPerBlock);
    node.labels[std::string(kRackKey)] = "rack-" + std::to_string(rack);
    node.labels["kubernetes.io/hostname"] = node.name;
    node.allocatable = Resources{{"cpu", 96000},
                                 {"memory", int64_t{1} << 40},
                                 {std::string(kGpu), kGpusPerNode},
                                 {"pods", 110}};
    const int64_t used = fill == kMixed ? used_gpus(rng) : (full(rng) ? kGpusPerNode : 0);
    if (used > 0) {
      AddBoundPod(
          node, Resources{{std::string(kGpu), used}, {"cpu", used * 8000}, {"memory", used << 34}});
    }
    nodes.push_back(std::move(node));
  }
  return Snapshot::Build(std::move(nodes));
}

GangRequest BuildGang(int pods) {
  GangRequest gang;
  gang.job_key = "bench/job";
  PodRequest pod;
  pod.requests = Resources{{std::string(kGpu), 8}, {"cpu", 32000}, {"memory", int64_t{256} << 30}};
  pod.tolerations.push_back({"nvidia.com/gpu", TolerationOperator::kExists, "", std::nullopt});
  gang.roles.push_back(Role{"worker", std::vector<PodRequest>(static_cast<size_t>(pods), pod)});
  gang.topology_keys = {std::string(kBlockKey), std::string(kRackKey)};
  return gang;
}

// Args: nodes, pods per gang, fill pattern.
void BM_PlaceGang(benchmark::State& state) {
  const auto node_count = static_cast<int>(state.range(0));
  const auto pods = static_cast<int>(state.range(1));
  const Snapshot snapshot = BuildCluster(node_count, static_cast<Fill>(state.range(2)));
  const GangRequest gang = BuildGang(pods);
  bool placed = false;
  for (auto _ : state) {
    Placement p = PlaceGang(snapshot, gang);
    placed = p.placed();
    benchmark::DoNotOptimize(p);
  }
  state.counters["placed"] = placed ? 1 : 0;
  state.counters["pods/s"] =
      benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsIterationInvariantRate);
  // Speed-up over kube-scheduler's CI floor for the same number of pods.
  state.counters["x_kube_floor"] =
      benchmark::Counter(static_cast<double>(pods) / kKubeSchedulerPodsPerSecond,
                         benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(state.range(2) == kMixed ? "mixed" : "whole");
}

BENCHMARK(BM_PlaceGang)
    ->ArgNames({"nodes", "pods", "fill"})
    ->ArgsProduct({{1000, 5000}, {8, 64, 256}, {kMixed, kWhole}})
    ->Unit(benchmark::kMicrosecond);

// The same gang under requiredTopologyKey: every block is searched for one that holds it.
void BM_PlaceGangRequiredBlock(benchmark::State& state) {
  const Snapshot snapshot = BuildCluster(static_cast<int>(state.range(0)), kMixed);
  GangRequest gang = BuildGang(static_cast<int>(state.range(1)));
  gang.required_topology_key = std::string(kBlockKey);
  for (auto _ : state) benchmark::DoNotOptimize(PlaceGang(snapshot, gang));
}

BENCHMARK(BM_PlaceGangRequiredBlock)
    ->ArgNames({"nodes", "pods"})
    ->Args({5000, 64})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep::scheduler

BENCHMARK_MAIN();
