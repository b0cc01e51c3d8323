#pragma once
// The launcher's configuration, parsed from flags and LOCKSTEP_* environment variables as the
// contract (protocol/contract.h) defines them. Pure apart from reading the token file.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/net.h"
#include "common/status.h"
#include "protocol/contract.h"

namespace lockstep::launcher {

struct LauncherConfig {
  std::string framework = "generic";
  uint32_t min_nodes = 1;
  uint32_t max_nodes = 1;
  uint32_t node_rank = 0;
  uint32_t nproc_per_node = 1;
  net::HostPort rdzv_endpoint;
  std::string rdzv_id;
  std::string token;  // secret: never logged
  bool has_token = false;
  // --insecure-no-auth: no token is acceptable (local use). Without a token and without it,
  // ParseConfig fails: a rendezvous keyed by nothing lets any peer join.
  bool insecure_no_auth = false;
  // --spare: a hot spare's launcher (docs/launcher.md "Hot spares"): it starts no children until
  // promoted, and then serves the node-rank, role and role index the server gave it.
  bool spare = false;
  std::string role = "worker";
  uint32_t role_index = 0;
  uint32_t attempt = 0;
  uint32_t max_restarts = 0;
  std::set<int> fail_exit_codes;  // a child exiting with one of these is never restarted in place
  std::chrono::milliseconds hang_timeout{0};  // 0 = off
  std::string heartbeat_file;
  // Not a flag: the file in the launcher's own directory its children get as
  // LOCKSTEP_PROGRESS_FILE (progress/progress_file.h); empty when it could not be made.
  std::string progress_file;
  std::string advertise_addr;
  uint32_t framework_port = 0;
  uint32_t master_port = 0;
  uint32_t kv_port = 0;
  std::string job_name;
  std::string pod_name;   // reported in the Join (LostMember)
  std::string node_name;
  std::string pod_uid;
  std::string termination_log;
  std::string nccl_library;
  std::chrono::milliseconds peer_timeout = protocol::contract::kDefaultPeerTimeout;
  std::chrono::milliseconds heartbeat_interval = protocol::contract::kDefaultHeartbeatInterval;
  std::chrono::milliseconds join_timeout{600000};
  std::chrono::milliseconds last_call{10000};
  std::chrono::milliseconds grace_period{10000};
  std::string log_format = "text";
  std::vector<std::string> command;
  bool help = false;
};

using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// `args` excludes argv[0]. Errors are one line naming the flag or variable at fault.
StatusOr<LauncherConfig> ParseConfig(const std::vector<std::string>& args, const EnvLookup& env);

// The process environment.
std::optional<std::string> ProcessEnv(std::string_view name);

// --help text: usage, then every flag with its environment name and default.
std::string HelpText();

}  // namespace lockstep::launcher
