#pragma once
// Small builders for scheduler tests: GPU nodes with topology labels, pods and gangs.

#include <string>
#include <vector>

#include "operator/scheduler/gang_request.h"
#include "operator/scheduler/node_info.h"
#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler::testing {

// A node with `gpus` GPUs (`used` of them requested by bound pods), 64 cpu, 512Gi, 110 pods.
inline NodeInfo GpuNode(std::string name, int64_t gpus, std::string block = "",
                        std::string rack = "", int64_t used = 0) {
  NodeInfo node;
  node.name = std::move(name);
  if (!block.empty()) node.labels[std::string(kBlockKey)] = std::move(block);
  if (!rack.empty()) node.labels[std::string(kRackKey)] = std::move(rack);
  node.allocatable = Resources{
      {"cpu", 64000}, {"memory", int64_t{512} << 30}, {std::string(kGpu), gpus}, {"pods", 110}};
  if (used > 0) AddBoundPod(node, Resources{{std::string(kGpu), used}, {"cpu", 1000}});
  return node;
}

inline PodRequest GpuPod(int64_t gpus, int64_t cpu_millis = 1000) {
  PodRequest pod;
  pod.requests = Resources{{std::string(kGpu), gpus}, {"cpu", cpu_millis}};
  return pod;
}

inline GangRequest Gang(std::string key, int pods, int64_t gpus_per_pod) {
  GangRequest gang;
  gang.job_key = std::move(key);
  gang.roles.push_back(
      Role{"worker", std::vector<PodRequest>(static_cast<size_t>(pods), GpuPod(gpus_per_pod))});
  return gang;
}

// blocks x racks x nodes_per_rack nodes named b<i>-r<j>-n<k>, each with `gpus` free GPUs.
inline std::vector<NodeInfo> Cluster(int blocks, int racks, int nodes_per_rack, int64_t gpus) {
  std::vector<NodeInfo> nodes;
  for (int b = 0; b < blocks; ++b) {
    for (int r = 0; r < racks; ++r) {
      for (int n = 0; n < nodes_per_rack; ++n) {
        const std::string block = "b" + std::to_string(b);
        const std::string rack = block + "-r" + std::to_string(r);
        nodes.push_back(GpuNode(rack + "-n" + std::to_string(n), gpus, block, rack));
      }
    }
  }
  return nodes;
}

}  // namespace lockstep::scheduler::testing
