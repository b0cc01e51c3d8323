#include "launcher/child_plan.h"

#include "launcher/world_builder.h"
#include "protocol/contract.h"

#if defined(LOCKSTEP_HAVE_FRAMEWORKS)
#include "launcher/frameworks/frameworks.h"
#endif

namespace lockstep::launcher {
namespace {

namespace contract = protocol::contract;

using Env = std::map<std::string, std::string>;

Env Inherited(const std::vector<std::string>& base_env) {
  Env inherited;
  for (const std::string& kv : base_env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    inherited[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // The token authenticates launchers; training code has no use for it.
  inherited.erase(std::string(contract::kEnvToken));
  return inherited;
}

supervisor::ChildSpec MakeSpec(const LauncherConfig& config, const World& world,
                               const Env& inherited, int local_rank, int rank,
                               std::vector<std::string> argv, const Env& framework_env,
                               const Env& env_defaults) {
  supervisor::ChildSpec spec;
  spec.rank = rank;
  spec.local_rank = local_rank;
  spec.heartbeat_file = HeartbeatFileFor(config.heartbeat_file, local_rank);
  Env env = inherited;
  for (const auto& [k, v] : env_defaults) env.emplace(k, v);  // the user's value wins
  for (const auto& [k, v] : GenericChildEnv(world, local_rank, spec.heartbeat_file)) env[k] = v;
  if (!config.progress_file.empty()) {
    env[std::string(contract::kChildProgressFile)] = config.progress_file;
  }
  for (const auto& [k, v] : framework_env) env[k] = v;
  spec.spawn.argv = std::move(argv);
  for (const auto& [k, v] : env) spec.spawn.env.push_back(k + "=" + v);
  return spec;
}

}  // namespace

StatusOr<LocalPlan> PlanLocalChildren(const LauncherConfig& config, const World& world,
                                      const std::vector<std::string>& base_env) {
  const Env inherited = Inherited(base_env);
  LocalPlan plan;
#if defined(LOCKSTEP_HAVE_FRAMEWORKS)
  LS_ASSIGN_OR_RETURN(frameworks::ChildPlan fw, frameworks::PlanChildren(world, config.command));
  for (frameworks::ChildProcess& c : fw.children) {
    plan.children.push_back(MakeSpec(config, world, inherited, c.local_rank, c.global_rank,
                                     std::move(c.argv), c.env, c.env_defaults));
  }
  plan.tcp_store = fw.services.tcp_store;
  plan.gloo_kv = fw.services.gloo_kv;
  plan.gloo_scope_sizes = fw.services.gloo_scope_sizes;
#else
  const int nproc = world.self().nproc;
  for (int local_rank = 0; local_rank < nproc; ++local_rank) {
    plan.children.push_back(MakeSpec(config, world, inherited, local_rank,
                                     world.self().first_rank + local_rank, config.command, {},
                                     {}));
  }
#endif
  return plan;
}

}  // namespace lockstep::launcher
