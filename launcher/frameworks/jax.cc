// JAX: jax.distributed.initialize() reads only JAX_COORDINATOR_ADDRESS from the environment, so
// the process id and count travel as LOCKSTEP_PROCESS_ID / LOCKSTEP_NUM_PROCESSES and the script
// passes them on, in one line (docs/frameworks.md):
//   jax.distributed.initialize(os.environ["JAX_COORDINATOR_ADDRESS"],
//                              int(os.environ["LOCKSTEP_NUM_PROCESSES"]),
//                              int(os.environ["LOCKSTEP_PROCESS_ID"]))
// Process 0 (on node 0) runs the coordination service at master_addr:master_port; nothing is
// hosted by the launcher. No SLURM/OMPI variables are faked: they would flip other detectors.

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks {

StatusOr<ChildPlan> PlanJax(const World& world, const std::vector<std::string>& command) {
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  if (world.master_addr.empty() || world.master_port <= 0) {
    return InvalidArgumentError("jax needs master_addr and master_port for the coordinator");
  }
  ChildPlan plan = internal::WorkerPerLocalRank(world, command);
  for (ChildProcess& c : plan.children) {
    c.env = {
        {"JAX_COORDINATOR_ADDRESS", internal::HostPort(world.master_addr, world.master_port)},
        {"LOCKSTEP_PROCESS_ID", std::to_string(c.global_rank)},
        {"LOCKSTEP_NUM_PROCESSES", std::to_string(world.world_size)},
    };
  }
  return plan;
}

}  // namespace lockstep::launcher::frameworks
