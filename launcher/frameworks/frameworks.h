#pragma once
// Framework adapters: turn the World of a rendezvous round into what this launcher starts (one
// argv and environment per local process) and which services node 0's launcher hosts. Pure
// functions, one file per framework; every variable is unit-tested.
//
// What the launcher core does with a ChildPlan:
//  1. On node 0 only, before starting children: if `services.tcp_store`, start a
//     stores::TcpStoreServer on world.master_port; if `services.gloo_kv`, start a
//     stores::GlooKvServer(services.gloo_scope_sizes) on world.kv_port. Start FRESH servers for
//     every attempt (in-place restart): torch >= 2.4 workers no longer prefix their keys with
//     the attempt (torchelastic itself creates a new store per round), so keys of a dead attempt
//     (gloo/NCCL addresses) would otherwise be read by the next one. Stop them when the
//     launcher exits.
//  2. Start every ChildProcess: argv as given (argv[0] resolved through PATH), environment = the
//     launcher's own environment, then the generic LOCKSTEP_* child variables, then `env` (later
//     wins); `env_defaults` only where that environment lacks the name.
//  3. The pod's result is that of any job: the first failing child's exit code, else 0. Ray
//     fits this too: its one child per pod owns `ray start --block` and, on the head, runs the
//     entrypoint and exits with its code (ray.cc says how the workers' children end).

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/world.h"

namespace lockstep::launcher::frameworks {

struct ChildProcess {
  int local_rank = 0;
  int global_rank = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added on top of the launcher's environment
  // Set only when the launcher's own environment lacks the variable (the user's value wins),
  // e.g. OMP_NUM_THREADS and TORCH_NCCL_ASYNC_ERROR_HANDLING, as torchrun does.
  std::map<std::string, std::string> env_defaults;
};

// Services node 0's launcher hosts for this round (always false on other nodes).
struct NodeServices {
  bool tcp_store = false;                       // stores::TcpStoreServer on world.master_port
  bool gloo_kv = false;                         // stores::GlooKvServer on world.kv_port
  std::map<std::string, int> gloo_scope_sizes;  // its scopes: global, local_<host>, cross_<n>
};

struct ChildPlan {
  std::vector<ChildProcess> children;
  NodeServices services;
};

// Dispatches on world.framework ("pytorch", "tensorflow", "jax", "horovod", "ray", "nccl",
// "generic"; "" means generic). `command` is the user's training command. Fails with
// InvalidArgument on an unknown framework, an empty command, or a world that cannot be served
// (e.g. a TF role the cluster spec does not know, a peer without a port where one is needed).
StatusOr<ChildPlan> PlanChildren(const World& world, const std::vector<std::string>& command);

// Per framework (exposed for tests).
StatusOr<ChildPlan> PlanPyTorch(const World& world, const std::vector<std::string>& command);
StatusOr<ChildPlan> PlanTensorFlow(const World& world, const std::vector<std::string>& command);
StatusOr<ChildPlan> PlanJax(const World& world, const std::vector<std::string>& command);
StatusOr<ChildPlan> PlanHorovod(const World& world, const std::vector<std::string>& command);
StatusOr<ChildPlan> PlanRay(const World& world, const std::vector<std::string>& command);
StatusOr<ChildPlan> PlanGeneric(const World& world, const std::vector<std::string>& command);

}  // namespace lockstep::launcher::frameworks
