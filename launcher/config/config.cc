#include "launcher/config/config.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "protocol/contract.h"

namespace lockstep::launcher {
namespace {

using protocol::contract::FlagSpec;
using protocol::contract::kFlags;

constexpr std::string_view kFrameworks[] = {"pytorch", "tensorflow", "jax", "horovod",
                                            "ray",     "nccl",       "generic"};

const FlagSpec* FindFlag(std::string_view name) {
  for (const FlagSpec& f : kFlags) {
    if (!f.flag.empty() && f.flag == name) return &f;
  }
  return nullptr;
}

// A value and where it came from, for error messages.
struct Raw {
  std::string value;
  std::string source;
};

class Values {
 public:
  Values(std::map<std::string, std::string> cli, const EnvLookup& env)
      : cli_(std::move(cli)), env_(env) {}

  Raw Get(std::string_view env_name) const {
    for (const FlagSpec& f : kFlags) {
      if (f.env != env_name) continue;
      if (!f.flag.empty()) {
        auto it = cli_.find(std::string(f.flag));
        if (it != cli_.end()) return {it->second, std::string(f.flag)};
      }
      if (std::optional<std::string> v = env_(f.env)) return {*v, std::string(f.env)};
      return {std::string(f.default_value), std::string(f.flag.empty() ? f.env : f.flag)};
    }
    return {"", std::string(env_name)};
  }

 private:
  std::map<std::string, std::string> cli_;
  const EnvLookup& env_;
};

Status Bad(const Raw& raw, std::string_view why) {
  return InvalidArgumentError(raw.source + ": " + std::string(why) + " (got '" + raw.value +
                              "')");
}

StatusOr<uint32_t> ToUint(const Raw& raw, uint32_t min, uint32_t max) {
  if (raw.value.empty() || raw.value.size() > 10) return Bad(raw, "want an integer");
  uint64_t v = 0;
  for (char c : raw.value) {
    if (c < '0' || c > '9') return Bad(raw, "want a non-negative integer");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v < min || v > max) {
    return Bad(raw, "want " + std::to_string(min) + ".." + std::to_string(max));
  }
  return static_cast<uint32_t>(v);
}

// "2,3,10-12": exit codes 1..255, single or as inclusive ranges; "" is none.
StatusOr<std::set<int>> ToExitCodes(const Raw& raw) {
  std::set<int> codes;
  std::string_view rest = raw.value;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t dash = item.find('-');
    const Raw lo{item.substr(0, dash), raw.source};
    const Raw hi{dash == std::string::npos ? item : item.substr(dash + 1), raw.source};
    LS_ASSIGN_OR_RETURN(uint32_t first, ToUint(lo, 1, 255));
    LS_ASSIGN_OR_RETURN(uint32_t last, ToUint(hi, first, 255));
    for (uint32_t c = first; c <= last; ++c) codes.insert(static_cast<int>(c));
  }
  return codes;
}

StatusOr<std::chrono::milliseconds> ToSeconds(const Raw& raw, bool allow_zero) {
  char* end = nullptr;
  const double s = std::strtod(raw.value.c_str(), &end);
  if (raw.value.empty() || end == nullptr || *end != '\0' || !std::isfinite(s) || s < 0 ||
      s > 1e7) {
    return Bad(raw, "want seconds, e.g. 5 or 0.5");
  }
  if (!allow_zero && s == 0) return Bad(raw, "must be > 0");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(s * 1000)));
}

// A switch: "1" from its flag; from the environment 1|true, or 0|false|"" for off.
StatusOr<bool> ToSwitch(const Raw& raw) {
  if (raw.value == "1" || raw.value == "true") return true;
  if (raw.value.empty() || raw.value == "0" || raw.value == "false") return false;
  return Bad(raw, "want 1|true|0|false");
}

Status ParseNnodes(const Raw& raw, LauncherConfig* c) {
  const size_t colon = raw.value.find(':');
  if (colon == std::string::npos) {
    LS_ASSIGN_OR_RETURN(c->min_nodes, ToUint(raw, 1, 1u << 20));
    c->max_nodes = c->min_nodes;
    return Status::Ok();
  }
  LS_ASSIGN_OR_RETURN(c->min_nodes, ToUint({raw.value.substr(0, colon), raw.source}, 1, 1u << 20));
  LS_ASSIGN_OR_RETURN(c->max_nodes, ToUint({raw.value.substr(colon + 1), raw.source}, 1, 1u << 20));
  if (c->min_nodes > c->max_nodes) return Bad(raw, "MIN must be <= MAX");
  return Status::Ok();
}

// Splits argv into flag values and the command after "--".
Status SplitArgs(const std::vector<std::string>& args, std::map<std::string, std::string>* cli,
                 LauncherConfig* c) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      c->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return Status::Ok();
    }
    if (a == "-h" || a == "--help") {
      c->help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      // torchrun style: the first non-flag starts the command.
      c->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      return Status::Ok();
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const FlagSpec* spec = FindFlag(name);
    if (spec == nullptr) return InvalidArgumentError("unknown flag " + name + " (see --help)");
    std::string& slot = (*cli)[name];
    if (eq != std::string::npos) {
      slot = a.substr(eq + 1);
    } else if (spec->is_switch) {
      slot.assign(1, '1');
    } else {
      if (i + 1 >= args.size()) return InvalidArgumentError(name + ": missing value");
      slot = args[++i];
    }
  }
  return Status::Ok();
}

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgumentError("--token-file: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' ||
                            token.back() == ' ' || token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) return InvalidArgumentError("--token-file: " + path + " is empty");
  return token;
}

Status ParseNumbers(const Values& v, LauncherConfig* c) {
  namespace k = protocol::contract;
  LS_RETURN_IF_ERROR(ParseNnodes(v.Get(k::kEnvNnodes), c));
  LS_ASSIGN_OR_RETURN(c->node_rank, ToUint(v.Get(k::kEnvNodeRank), 0, c->max_nodes - 1));
  LS_ASSIGN_OR_RETURN(c->nproc_per_node, ToUint(v.Get(k::kEnvNprocPerNode), 1, 4096));
  LS_ASSIGN_OR_RETURN(c->role_index, ToUint(v.Get(k::kEnvRoleIndex), 0, 1u << 20));
  LS_ASSIGN_OR_RETURN(c->attempt, ToUint(v.Get(k::kEnvAttempt), 0, 1u << 30));
  LS_ASSIGN_OR_RETURN(c->max_restarts, ToUint(v.Get(k::kEnvMaxRestarts), 0, 1u << 20));
  LS_ASSIGN_OR_RETURN(c->fail_exit_codes, ToExitCodes(v.Get(k::kEnvFailExitCodes)));
  LS_ASSIGN_OR_RETURN(c->framework_port, ToUint(v.Get(k::kEnvFrameworkPort), 0, 65535));
  LS_ASSIGN_OR_RETURN(c->master_port, ToUint(v.Get(k::kEnvMasterPort), 0, 65535));
  LS_ASSIGN_OR_RETURN(c->kv_port, ToUint(v.Get(k::kEnvKvPort), 0, 65535));
  LS_ASSIGN_OR_RETURN(c->hang_timeout, ToSeconds(v.Get(k::kEnvHangTimeout), true));
  LS_ASSIGN_OR_RETURN(c->peer_timeout, ToSeconds(v.Get(k::kEnvPeerTimeout), false));
  LS_ASSIGN_OR_RETURN(c->heartbeat_interval, ToSeconds(v.Get(k::kEnvHeartbeatInterval), false));
  LS_ASSIGN_OR_RETURN(c->join_timeout, ToSeconds(v.Get(k::kEnvJoinTimeout), false));
  LS_ASSIGN_OR_RETURN(c->last_call, ToSeconds(v.Get(k::kEnvLastCall), true));
  LS_ASSIGN_OR_RETURN(c->grace_period, ToSeconds(v.Get(k::kEnvGracePeriod), true));
  if (c->heartbeat_interval >= c->peer_timeout) {
    return InvalidArgumentError("--heartbeat-interval must be shorter than --peer-timeout");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<LauncherConfig> ParseConfig(const std::vector<std::string>& args, const EnvLookup& env) {
  namespace k = protocol::contract;
  LauncherConfig c;
  std::map<std::string, std::string> cli;
  LS_RETURN_IF_ERROR(SplitArgs(args, &cli, &c));
  if (c.help) return c;
  const Values v(std::move(cli), env);

  const Raw framework = v.Get(k::kEnvFramework);
  c.framework = framework.value;
  bool known = false;
  for (std::string_view f : kFrameworks) known = known || f == c.framework;
  if (!known) return Bad(framework, "want pytorch|tensorflow|jax|horovod|ray|nccl|generic");

  LS_RETURN_IF_ERROR(ParseNumbers(v, &c));
  const Raw endpoint = v.Get(k::kEnvRdzvEndpoint);
  StatusOr<net::HostPort> hp = net::ParseHostPort(endpoint.value);
  if (!hp.ok()) return Bad(endpoint, hp.status().message());
  c.rdzv_endpoint = *hp;

  c.rdzv_id = v.Get(k::kEnvRdzvId).value;
  if (c.rdzv_id.empty()) return Bad(v.Get(k::kEnvRdzvId), "must not be empty");
  c.role = v.Get(k::kEnvRole).value;
  if (c.role.empty()) return Bad(v.Get(k::kEnvRole), "must not be empty");
  c.heartbeat_file = v.Get(k::kEnvHeartbeatFile).value;
  c.advertise_addr = v.Get(k::kEnvAdvertiseAddr).value;
  c.job_name = v.Get(k::kEnvJobName).value;
  c.pod_name = v.Get(k::kEnvPodName).value;
  c.node_name = v.Get(k::kEnvNodeName).value;
  c.pod_uid = v.Get(k::kEnvPodUid).value;
  c.termination_log = v.Get(k::kEnvTerminationLog).value;
  c.nccl_library = v.Get(k::kEnvNcclLibrary).value;
  const Raw log_format = v.Get(k::kEnvLogFormat);
  c.log_format = log_format.value;
  if (c.log_format != "text" && c.log_format != "json") return Bad(log_format, "want text|json");

  const std::string token_file = v.Get(k::kEnvTokenFile).value;
  if (!token_file.empty()) {
    LS_ASSIGN_OR_RETURN(c.token, ReadToken(token_file));
    c.has_token = true;
  } else if (std::optional<std::string> token = env(k::kEnvToken); token && !token->empty()) {
    c.token = *token;
    c.has_token = true;
  }
  LS_ASSIGN_OR_RETURN(c.insecure_no_auth, ToSwitch(v.Get(k::kEnvInsecureNoAuth)));
  LS_ASSIGN_OR_RETURN(c.spare, ToSwitch(v.Get(k::kEnvSpare)));
  if (!c.has_token && !c.insecure_no_auth) {
    return InvalidArgumentError(
        "no rendezvous token: give --token-file or LOCKSTEP_TOKEN (the operator mounts one), or "
        "--insecure-no-auth for local use, where any peer that reaches the port may join");
  }
  if (c.command.empty()) return InvalidArgumentError("no command given (put it after --)");
  return c;
}

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string HelpText() {
  std::string out =
      "usage: lockstep-launcher [flags] -- COMMAND [ARGS...]\n"
      "\n"
      "Forms a world with the other launchers of the job (node 0 hosts the rendezvous), starts\n"
      "--nproc-per-node copies of COMMAND with the framework's environment, supervises them,\n"
      "and restarts the gang in place on failure (up to --max-restarts).\n"
      "Every flag may instead be given as its environment variable; a flag wins.\n\n";
  for (const FlagSpec& f : kFlags) {
    std::string name = f.flag.empty() ? std::string("(env only)") : std::string(f.flag);
    out += "  " + name + "  [" + std::string(f.env) + "]";
    if (!f.default_value.empty()) out += "  default: " + std::string(f.default_value);
    out += "\n      " + std::string(f.help) + "\n";
  }
  out +=
      "\nexit codes: the first failing child's code (signal n = 128+n), 0 on success;\n"
      "  2 usage, 75 peer lost (restart the gang), 76 hang, 77 refused by the rendezvous,\n"
      "  78 rendezvous timeout, 79 launcher failure.\n";
  return out;
}

}  // namespace lockstep::launcher
