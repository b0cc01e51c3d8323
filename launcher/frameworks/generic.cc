// Generic programs and raw NCCL ("nccl", "generic"): rank, size and local rank as LOCKSTEP_*,
// plus the round's NCCL unique id (hex of the 128 bytes, created by node 0's launcher) so a C++
// program can call ncclCommInitRank without its own exchange (docs/frameworks.md has the
// example). The launcher core's GenericChildEnv sets the same names; they are repeated here so
// a plan stands on its own.

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"
#include "protocol/contract.h"

namespace lockstep::launcher::frameworks {

StatusOr<ChildPlan> PlanGeneric(const World& world, const std::vector<std::string>& command) {
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  if (world.framework == "nccl" && world.nccl_unique_id_hex.size() != 256) {
    return FailedPreconditionError(
        "framework nccl needs the round's NCCL unique id, but node 0's launcher could not load "
        "NCCL");
  }
  ChildPlan plan = internal::WorkerPerLocalRank(world, command);
  namespace c = protocol::contract;
  for (ChildProcess& child : plan.children) {
    child.env = {
        {std::string(c::kChildRank), std::to_string(child.global_rank)},
        {std::string(c::kChildWorldSize), std::to_string(world.world_size)},
        {std::string(c::kChildLocalRank), std::to_string(child.local_rank)},
        {std::string(c::kChildLocalWorldSize), std::to_string(world.self().nproc)},
        {std::string(c::kChildNodeRank), std::to_string(world.node_rank)},
        {std::string(c::kChildNnodes), std::to_string(world.nnodes)},
    };
    if (!world.nccl_unique_id_hex.empty()) {
      child.env[std::string(c::kChildNcclUniqueId)] = world.nccl_unique_id_hex;
    }
  }
  return plan;
}

}  // namespace lockstep::launcher::frameworks
