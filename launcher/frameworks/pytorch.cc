// PyTorch (DDP, FSDP, DeviceMesh, Lightning): the environment torchrun's LocalElasticAgent gives
// each worker (torch/distributed/elastic/agent/server/local_elastic_agent.py), with node 0's
// launcher hosting the TCPStore-compatible store that workers join as clients
// (TORCHELASTIC_USE_AGENT_STORE=True; a fresh store per attempt, see frameworks.h). Lightning picks
// TorchElasticEnvironment because TORCHELASTIC_RUN_ID is set. Like torchrun >= 2.0 with the
// default --use-env, no --local-rank argument is appended.
//
// world.extra["pytorch.agent_store"] = "false" leaves the store to rank 0 of the workers instead
// (TORCHELASTIC_USE_AGENT_STORE=False, nothing hosted).

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks {
namespace {

// ROLE_RANK/ROLE_WORLD_SIZE count the processes of pods sharing this pod's role, in node order.
// The rendezvous sends them with the compact world (the launcher asks for no peer table for
// PyTorch); a world without them and without the table counts every pod as this pod's role
// (torchrun's single-role default).
void RoleRanks(const World& world, int* role_first_rank, int* role_world_size) {
  const PeerInfo& self = world.self();
  if (world.role_world_size > 0) {
    *role_first_rank = world.role_first_rank;
    *role_world_size = world.role_world_size;
    return;
  }
  if (!world.peers_complete) {
    *role_first_rank = self.first_rank;
    *role_world_size = world.world_size;
    return;
  }
  *role_first_rank = 0;
  *role_world_size = 0;
  for (const PeerInfo& p : world.peers) {
    if (p.role != self.role) continue;
    if (p.node_rank < self.node_rank) *role_first_rank += p.nproc;
    *role_world_size += p.nproc;
  }
}

}  // namespace

StatusOr<ChildPlan> PlanPyTorch(const World& world, const std::vector<std::string>& command) {
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  if (world.master_addr.empty() || world.master_port <= 0) {
    return InvalidArgumentError("pytorch needs master_addr and master_port");
  }
  const bool agent_store = internal::Extra(world, "pytorch.agent_store", "true") != "false";
  const PeerInfo& self = world.self();
  int role_first = 0;
  int role_size = 0;
  RoleRanks(world, &role_first, &role_size);

  ChildPlan plan = internal::WorkerPerLocalRank(world, command);
  plan.services.tcp_store = agent_store && world.node_rank == 0;
  for (ChildProcess& c : plan.children) {
    c.env = {
        {"RANK", std::to_string(c.global_rank)},
        {"LOCAL_RANK", std::to_string(c.local_rank)},
        {"WORLD_SIZE", std::to_string(world.world_size)},
        {"LOCAL_WORLD_SIZE", std::to_string(self.nproc)},
        {"GROUP_RANK", std::to_string(world.node_rank)},
        {"GROUP_WORLD_SIZE", std::to_string(world.nnodes)},
        {"ROLE_RANK", std::to_string(role_first + c.local_rank)},
        {"ROLE_WORLD_SIZE", std::to_string(role_size)},
        {"ROLE_NAME", self.role},
        {"MASTER_ADDR", world.master_addr},
        {"MASTER_PORT", std::to_string(world.master_port)},
        {"TORCHELASTIC_RUN_ID", world.run_id},
        {"TORCHELASTIC_RESTART_COUNT", std::to_string(world.restart_count)},
        {"TORCHELASTIC_MAX_RESTARTS", std::to_string(world.max_restarts)},
        {"TORCHELASTIC_USE_AGENT_STORE", agent_store ? "True" : "False"},
    };
    c.env_defaults["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1";
    // torchrun: one OpenMP thread per process when several share the node, unless the user set it.
    if (self.nproc > 1) c.env_defaults["OMP_NUM_THREADS"] = "1";
  }
  return plan;
}

}  // namespace lockstep::launcher::frameworks
