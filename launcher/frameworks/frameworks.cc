#include "launcher/frameworks/frameworks.h"

namespace lockstep::launcher::frameworks {

StatusOr<ChildPlan> PlanChildren(const World& world, const std::vector<std::string>& command) {
  const std::string& f = world.framework;
  if (f == "pytorch") return PlanPyTorch(world, command);
  if (f == "tensorflow") return PlanTensorFlow(world, command);
  if (f == "jax") return PlanJax(world, command);
  if (f == "horovod") return PlanHorovod(world, command);
  if (f == "ray") return PlanRay(world, command);
  if (f == "nccl" || f == "generic" || f.empty()) return PlanGeneric(world, command);
  return InvalidArgumentError("unknown framework \"" + f +
                              "\" (want pytorch, tensorflow, jax, horovod, ray, nccl or generic)");
}

}  // namespace lockstep::launcher::frameworks
