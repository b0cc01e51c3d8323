#include "launcher/world_builder.h"

#include "launcher/nccl/nccl.h"
#include "protocol/contract.h"

namespace lockstep::launcher {

World BuildWorld(const LauncherConfig& config, const protocol::WorldMsg& msg,
                 const std::optional<protocol::PeerTable>& table, int restart_count) {
  World w;
  w.run_id = config.rdzv_id;
  w.attempt = static_cast<int>(msg.attempt);
  w.restart_count = restart_count;
  w.max_restarts = static_cast<int>(config.max_restarts);
  w.framework = config.framework;
  w.node_rank = static_cast<int>(msg.group_rank);
  w.nnodes = static_cast<int>(msg.nnodes);
  w.world_size = static_cast<int>(msg.world_size);
  w.role_first_rank = static_cast<int>(msg.role_first_rank);
  w.role_world_size = static_cast<int>(msg.role_world_size);
  w.peers.resize(msg.nnodes);
  for (size_t i = 0; i < w.peers.size(); ++i) w.peers[i].node_rank = static_cast<int>(i);
  if (table && table->peers.size() == msg.nnodes) {
    for (const protocol::PeerEntry& p : table->peers) {
      PeerInfo& info = w.peers[p.group_rank];
      info.role = p.role;
      info.role_index = static_cast<int>(p.role_index);
      info.host = p.host;
      info.port = static_cast<int>(p.port);
      info.nproc = static_cast<int>(p.nproc);
      info.first_rank = static_cast<int>(p.first_rank);
    }
    w.peers_complete = true;
  } else {
    PeerInfo& self = w.peers[msg.group_rank];
    self.role = config.role;
    self.role_index = static_cast<int>(config.role_index);
    self.host = config.advertise_addr;
    self.port = static_cast<int>(config.framework_port);
    self.nproc = static_cast<int>(msg.nproc);
    self.first_rank = static_cast<int>(msg.first_rank);
    w.peers[0].host = msg.master_host;
  }
  w.master_addr = msg.master_host;
  w.master_port = static_cast<int>(config.master_port);
  w.kv_port = static_cast<int>(config.kv_port);
  if (!msg.nccl_id.empty()) w.nccl_unique_id_hex = nccl::ToHex(msg.nccl_id);
  if (!config.job_name.empty()) w.extra["job_name"] = config.job_name;
  return w;
}

bool NeedsPeerTable(std::string_view framework) {
  // TF_CONFIG lists every task's host:port; Horovod's host names, cross ranks and Gloo scope
  // sizes come from every pod's host and nproc. PyTorch (role ranks come in the World), JAX,
  // Ray (everyone meets node 0), NCCL and generic need only themselves and node 0.
  return framework == "tensorflow" || framework == "horovod";
}

std::string HeartbeatFileFor(const std::string& base, int local_rank) {
  if (base.empty()) return "";
  return base + "." + std::to_string(local_rank);
}

std::map<std::string, std::string> GenericChildEnv(const World& world, int local_rank,
                                                   const std::string& heartbeat_file) {
  namespace k = protocol::contract;
  const PeerInfo& self = world.self();
  std::map<std::string, std::string> env = {
      {std::string(k::kChildRank), std::to_string(self.first_rank + local_rank)},
      {std::string(k::kChildWorldSize), std::to_string(world.world_size)},
      {std::string(k::kChildLocalRank), std::to_string(local_rank)},
      {std::string(k::kChildLocalWorldSize), std::to_string(self.nproc)},
      {std::string(k::kChildNodeRank), std::to_string(world.node_rank)},
      {std::string(k::kChildNnodes), std::to_string(world.nnodes)},
      {std::string(k::kChildAttempt), std::to_string(world.attempt)},
      {std::string(k::kChildRestartCount), std::to_string(world.restart_count)},
      {std::string(k::kChildRunId), world.run_id},
      {std::string(k::kChildMasterAddr), world.master_addr},
      {std::string(k::kChildMasterPort), std::to_string(world.master_port)},
  };
  if (!world.nccl_unique_id_hex.empty()) {
    env[std::string(k::kChildNcclUniqueId)] = world.nccl_unique_id_hex;
  }
  if (!heartbeat_file.empty()) env[std::string(k::kChildHeartbeatFile)] = heartbeat_file;
  return env;
}

}  // namespace lockstep::launcher
