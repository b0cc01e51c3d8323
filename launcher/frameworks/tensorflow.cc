// TensorFlow: one TF_CONFIG per task (tf.distribute.cluster_resolver.TFConfigClusterResolver),
// one task per pod. The cluster lists every chief, worker and ps at the host:port each pod
// reserved (PeerInfo::port, where the task's gRPC server listens); an evaluator gets TF_CONFIG
// for its own task but, as in TF's convention, is not part of the cluster. Workers also get the
// DTensor multi-client variables (DTENSOR_JOBS lists the workers' host:port in index order).

#include <nlohmann/json.hpp>

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks {
namespace {

bool KnownRole(const std::string& role) {
  return role == "chief" || role == "worker" || role == "ps" || role == "evaluator";
}

// role -> "host:port" ordered by role index; the evaluator is left out.
StatusOr<std::map<std::string, std::vector<std::string>>> ClusterSpec(const World& world) {
  std::map<std::string, std::map<int, std::string>> by_index;
  for (const PeerInfo& p : world.peers) {
    if (!KnownRole(p.role)) {
      return InvalidArgumentError("tensorflow: pod " + std::to_string(p.node_rank) +
                                  " has role \"" + p.role +
                                  "\" (want chief, worker, ps or evaluator)");
    }
    if (p.port <= 0) {
      return InvalidArgumentError("tensorflow: pod " + std::to_string(p.node_rank) +
                                  " reserved no framework port for its gRPC server");
    }
    if (p.role == "evaluator") continue;
    if (!by_index[p.role].emplace(p.role_index, internal::HostPort(p.host, p.port)).second) {
      return InvalidArgumentError("tensorflow: two pods are " + p.role + " " +
                                  std::to_string(p.role_index));
    }
  }
  std::map<std::string, std::vector<std::string>> cluster;
  for (auto& [role, tasks] : by_index) {
    int expect = 0;
    for (auto& [index, addr] : tasks) {
      if (index != expect++) {
        return InvalidArgumentError("tensorflow: " + role + " indices are not 0..n-1");
      }
      cluster[role].push_back(addr);
    }
  }
  return cluster;
}

}  // namespace

StatusOr<ChildPlan> PlanTensorFlow(const World& world, const std::vector<std::string>& command) {
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  LS_RETURN_IF_ERROR(internal::RequirePeerTable(world));
  const PeerInfo& self = world.self();
  if (self.nproc != 1) {
    return InvalidArgumentError("tensorflow runs one task per pod (nproc " +
                                std::to_string(self.nproc) + ")");
  }
  LS_ASSIGN_OR_RETURN(auto cluster, ClusterSpec(world));
  nlohmann::json tf_config;
  tf_config["cluster"] = cluster;
  tf_config["task"] = {{"type", self.role}, {"index", self.role_index}};

  ChildPlan plan = internal::WorkerPerLocalRank(world, command);
  ChildProcess& c = plan.children.at(0);
  c.env["TF_CONFIG"] = tf_config.dump();
  if (self.role == "worker") {
    const std::vector<std::string>& workers = cluster["worker"];
    std::string jobs;
    for (const std::string& w : workers) jobs += (jobs.empty() ? "" : ",") + w;
    c.env["DTENSOR_JOBS"] = jobs;
    c.env["DTENSOR_CLIENT_ID"] = std::to_string(self.role_index);
    c.env["DTENSOR_NUM_CLIENTS"] = std::to_string(workers.size());
    c.env["DTENSOR_JOB_NAME"] = "worker";
  }
  return plan;
}

}  // namespace lockstep::launcher::frameworks
