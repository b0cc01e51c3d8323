#pragma once
// Worlds for the adapter tests.

#include <string>
#include <vector>

#include "launcher/world.h"

namespace lockstep::launcher::testing {

// `nnodes` pods of `nproc` processes each, all role "worker", seen from `node_rank`.
inline World UniformWorld(const std::string& framework, int nnodes, int nproc, int node_rank) {
  World w;
  w.run_id = "job-uid";
  w.framework = framework;
  w.node_rank = node_rank;
  w.nnodes = nnodes;
  w.master_addr = "job-worker-0.job";
  w.master_port = 29500;
  w.kv_port = 29501;
  for (int i = 0; i < nnodes; ++i) {
    PeerInfo p;
    p.node_rank = i;
    p.role_index = i;
    p.host = "job-worker-" + std::to_string(i) + ".job";
    p.port = 2222;
    p.nproc = nproc;
    p.first_rank = i * nproc;
    w.peers.push_back(p);
  }
  w.world_size = nnodes * nproc;
  w.peers_complete = true;
  return w;
}

// One pod per (role, index), in the given order, one process each.
inline World RoleWorld(const std::string& framework,
                       const std::vector<std::pair<std::string, int>>& roles, int node_rank) {
  World w = UniformWorld(framework, static_cast<int>(roles.size()), 1, node_rank);
  for (size_t i = 0; i < roles.size(); ++i) {
    w.peers[i].role = roles[i].first;
    w.peers[i].role_index = roles[i].second;
    w.peers[i].host = roles[i].first + "-" + std::to_string(roles[i].second) + ".job";
  }
  return w;
}

}  // namespace lockstep::launcher::testing
