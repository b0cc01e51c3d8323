#pragma once
// A cluster with running gangs for preemption tests: each running gang's pods are counted on
// their nodes (as the scheduling cycle counts bound pods) and recorded as a RunningGang.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "operator/scheduler/preemption.h"
#include "operator/scheduler/snapshot.h"
#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler::testing {

class RunningCluster {
 public:
  explicit RunningCluster(std::vector<NodeInfo> nodes) {
    for (NodeInfo& n : nodes) nodes_.emplace(n.name, std::move(n));
  }

  // A running gang with one pod of `requests` on each named node (a name may repeat).
  RunningCluster& Run(std::string key, int32_t priority, int start_seconds,
                      const std::vector<std::string>& on_nodes, const Resources& requests) {
    RunningGang gang;
    gang.job_key = std::move(key);
    gang.priority = priority;
    gang.start_time = std::chrono::system_clock::time_point(std::chrono::seconds(start_seconds));
    for (const std::string& node : on_nodes) {
      AddBoundPod(nodes_.at(node), requests);
      gang.pods.push_back({node, requests});
    }
    running_.push_back(std::move(gang));
    return *this;
  }
  RunningCluster& RunGpus(std::string key, int32_t priority, int start_seconds,
                          const std::vector<std::string>& on_nodes, int64_t gpus) {
    return Run(std::move(key), priority, start_seconds, on_nodes, GpuPod(gpus).requests);
  }

  Snapshot Build() const {
    std::vector<NodeInfo> list;
    for (const auto& [name, node] : nodes_) list.push_back(node);
    return Snapshot::Build(std::move(list));
  }
  const std::vector<RunningGang>& running() const { return running_; }

  std::vector<std::string> VictimKeys(const PreemptionPlan& plan) const {
    std::vector<std::string> keys;
    for (size_t v : plan.victims) keys.push_back(running_[v].job_key);
    return keys;
  }

 private:
  std::map<std::string, NodeInfo> nodes_;
  std::vector<RunningGang> running_;
};

inline GangRequest Preemptor(int pods, int64_t gpus_per_pod, int32_t priority) {
  GangRequest gang = Gang("ns/preemptor", pods, gpus_per_pod);
  gang.priority = priority;
  return gang;
}

}  // namespace lockstep::scheduler::testing
