#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks::internal {

Status ValidateWorld(const World& world, const std::vector<std::string>& command) {
  if (command.empty()) return InvalidArgumentError("no training command given");
  if (world.peers.empty() || static_cast<int>(world.peers.size()) != world.nnodes) {
    return InvalidArgumentError("world has " + std::to_string(world.peers.size()) +
                                " peers for nnodes=" + std::to_string(world.nnodes));
  }
  if (world.node_rank < 0 || world.node_rank >= world.nnodes) {
    return InvalidArgumentError("node rank " + std::to_string(world.node_rank) +
                                " outside the world");
  }
  if (!world.peers_complete) {
    // Only this pod's entry is filled in (frameworks that need no peer table).
    const PeerInfo& self = world.self();
    if (self.nproc < 0 || self.first_rank < 0 || self.first_rank + self.nproc > world.world_size) {
      return InvalidArgumentError("this pod's first rank and nproc fall outside the world");
    }
    return Status::Ok();
  }
  int next_rank = 0;
  for (size_t i = 0; i < world.peers.size(); ++i) {
    const PeerInfo& p = world.peers[i];
    if (p.node_rank != static_cast<int>(i) || p.nproc < 0 || p.first_rank != next_rank) {
      return InvalidArgumentError("peer " + std::to_string(i) +
                                  " has an inconsistent node rank, nproc or first rank");
    }
    next_rank += p.nproc;
  }
  if (next_rank != world.world_size) {
    return InvalidArgumentError("world size " + std::to_string(world.world_size) +
                                " differs from the peers' process count " +
                                std::to_string(next_rank));
  }
  return Status::Ok();
}

ChildPlan WorkerPerLocalRank(const World& world, const std::vector<std::string>& command) {
  ChildPlan plan;
  const PeerInfo& self = world.self();
  for (int local = 0; local < self.nproc; ++local) {
    ChildProcess child;
    child.local_rank = local;
    child.global_rank = self.first_rank + local;
    child.argv = command;
    plan.children.push_back(std::move(child));
  }
  return plan;
}

Status RequirePeerTable(const World& world) {
  if (world.peers_complete) return Status::Ok();
  return InvalidArgumentError("framework " + world.framework +
                              " needs every pod's host, port and role (the peer table)");
}

std::string HostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && !host.starts_with('[');
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Extra(const World& world, const std::string& key, const std::string& fallback) {
  auto it = world.extra.find(key);
  return it == world.extra.end() ? fallback : it->second;
}

}  // namespace lockstep::launcher::frameworks::internal
