// Horovod with the Gloo controller, without horovodrun, mpirun or ssh: each process gets the
// per-slot variables horovodrun's gloo_run.py would export, and the rendezvous address of node
// 0's launcher, which serves Horovod's HTTP KV protocol (stores::GlooKvServer). Cross rank/size
// follow horovod/runner/common/util/hosts.py: the index and count of pods that have a process at
// the same local rank. world.extra["horovod.iface"] sets HOROVOD_GLOO_IFACE (the NIC Gloo binds);
// without it Gloo uses the address HOROVOD_HOSTNAME resolves to.

#include "launcher/frameworks/horovod.h"

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks {

std::string HorovodHostName(const World& world, int node_rank) {
  const PeerInfo& p = world.peers.at(static_cast<size_t>(node_rank));
  for (const PeerInfo& other : world.peers) {
    if (other.node_rank != p.node_rank && other.host == p.host) {
      return p.host + "-" + std::to_string(node_rank);
    }
  }
  return p.host;
}

std::map<std::string, int> HorovodScopeSizes(const World& world) {
  std::map<std::string, int> sizes;
  sizes["global"] = world.world_size;
  for (const PeerInfo& p : world.peers) {
    sizes["local_" + HorovodHostName(world, p.node_rank)] = p.nproc;
    for (int local = 0; local < p.nproc; ++local) sizes["cross_" + std::to_string(local)]++;
  }
  return sizes;
}

StatusOr<ChildPlan> PlanHorovod(const World& world, const std::vector<std::string>& command) {
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  LS_RETURN_IF_ERROR(internal::RequirePeerTable(world));
  if (world.master_addr.empty() || world.kv_port <= 0) {
    return InvalidArgumentError("horovod needs master_addr and kv_port for the Gloo rendezvous");
  }
  const PeerInfo& self = world.self();
  const std::string iface = internal::Extra(world, "horovod.iface", "");
  ChildPlan plan = internal::WorkerPerLocalRank(world, command);
  if (world.node_rank == 0) {
    plan.services.gloo_kv = true;
    plan.services.gloo_scope_sizes = HorovodScopeSizes(world);
  }
  for (ChildProcess& c : plan.children) {
    int cross_rank = 0;
    int cross_size = 0;
    for (const PeerInfo& p : world.peers) {
      if (p.nproc <= c.local_rank) continue;
      if (p.node_rank < self.node_rank) ++cross_rank;
      ++cross_size;
    }
    c.env = {
        {"HOROVOD_HOSTNAME", HorovodHostName(world, self.node_rank)},
        {"HOROVOD_RANK", std::to_string(c.global_rank)},
        {"HOROVOD_SIZE", std::to_string(world.world_size)},
        {"HOROVOD_LOCAL_RANK", std::to_string(c.local_rank)},
        {"HOROVOD_LOCAL_SIZE", std::to_string(self.nproc)},
        {"HOROVOD_CROSS_RANK", std::to_string(cross_rank)},
        {"HOROVOD_CROSS_SIZE", std::to_string(cross_size)},
        {"HOROVOD_CONTROLLER", "gloo"},
        {"HOROVOD_CPU_OPERATIONS", "gloo"},
        {"HOROVOD_GLOO_RENDEZVOUS_ADDR", world.master_addr},
        {"HOROVOD_GLOO_RENDEZVOUS_PORT", std::to_string(world.kv_port)},
        {"PYTHONUNBUFFERED", "1"},
    };
    if (!iface.empty()) c.env["HOROVOD_GLOO_IFACE"] = iface;
  }
  return plan;
}

}  // namespace lockstep::launcher::frameworks
