#pragma once
// What this launcher starts for one attempt: one ChildSpec per local process, plus the services
// node 0 hosts. The generic LOCKSTEP_* environment (world_builder.h) always applies; when the
// frameworks library (launcher/frameworks/, target lockstep_launcher_frameworks) is built, its
// PlanChildren() supplies each process's command and framework environment on top
// (LOCKSTEP_HAVE_FRAMEWORKS); otherwise every framework gets the generic plan.

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/config/config.h"
#include "launcher/supervisor/supervisor.h"
#include "launcher/world.h"

namespace lockstep::launcher {

struct LocalPlan {
  std::vector<supervisor::ChildSpec> children;
  bool tcp_store = false;  // node 0 hosts a TCPStore-compatible store on world.master_port
  bool gloo_kv = false;    // node 0 hosts Horovod's Gloo KV server on world.kv_port
  std::map<std::string, int> gloo_scope_sizes;
};

// `base_env` is the launcher's own environment ("KEY=VALUE"); the token is removed from it.
StatusOr<LocalPlan> PlanLocalChildren(const LauncherConfig& config, const World& world,
                                      const std::vector<std::string>& base_env);

}  // namespace lockstep::launcher
