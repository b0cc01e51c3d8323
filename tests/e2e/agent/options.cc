#include "tests/e2e/agent/options.h"

#include <charconv>
#include <functional>
#include <map>
#include <type_traits>

namespace lockstep::e2e {
namespace {

StatusOr<int64_t> ParseInt(const std::string& flag, const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return InvalidArgumentError(flag + ": not a non-negative integer: " + text);
  }
  return value;
}

}  // namespace

std::string Usage() {
  return "usage: lockstep-test-node-agent [flags]\n"
         "  --kubeconfig PATH        (default: $KUBECONFIG)\n"
         "  --node-name NAME         repeatable; or --nodes N [--name-prefix agent-node-]\n"
         "  --gpus N                 nvidia.com/gpu capacity per node (default 8)\n"
         "  --block B --rack R       topology labels (default block-0, rack-0)\n"
         "  --launcher-binary PATH   mapped to /lockstep-launcher of --launcher-image\n"
         "  --launcher-image PREFIX  (default ghcr.io/lockstep/launcher)\n"
         "  --python PATH            the venv python; its bin/ is first on every pod's PATH\n"
         "  --image-map PREFIX=DIR   repeatable; /x in a command becomes DIR/x when it exists\n"
         "  --state-dir DIR          (default /run/lockstep-test-node-agent)\n"
         "  --bridge NAME --subnet CIDR   (default lsbr0, 10.213.0.0/16)\n"
         "  --heartbeat-ms N --lease-duration-s N   (default 2000, 10)\n"
         "  --kubelet-port N         kubectl logs endpoint on the bridge address (default\n"
         "                           10250; 0 = none)\n"
         "  --image-layout DIR       repeatable; an OCI layout whose images pods run with runc\n"
         "  --apiserver-proxy=true   pods reach the API server at the kubernetes Service's IP\n"
         "  --schedule-namespace NS  repeatable; bind NS's default-scheduler pods to these nodes\n"
         "control a running agent (by --state-dir) and exit:\n"
         "  --partition-node NODE    stop the node's heartbeats; pods keep running\n"
         "  --fail-node NODE         kill the node's pods and stop its heartbeats\n"
         "  --import-image DIR       add an OCI layout's images to the agent's image store\n";
}

StatusOr<AgentOptions> ParseOptions(const std::vector<std::string>& args) {
  AgentOptions o;
  int64_t nodes = 0;
  std::string prefix = "agent-node-";
  using Setter = std::function<Status(const std::string&)>;
  auto str = [](std::string* out) -> Setter {
    return [out](const std::string& v) {
      *out = v;
      return Status::Ok();
    };
  };
  auto append = [](std::vector<std::string>* out) -> Setter {
    return [out](const std::string& v) {
      out->push_back(v);
      return Status::Ok();
    };
  };
  auto num = [](const std::string& flag, auto* out) -> Setter {
    return [flag, out](const std::string& v) -> Status {
      LS_ASSIGN_OR_RETURN(int64_t n, ParseInt(flag, v));
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(n);
      return Status::Ok();
    };
  };
  const std::map<std::string, Setter> flags = {
      {"--kubeconfig", str(&o.kubeconfig)},
      {"--node-name",
       [&o](const std::string& v) {
         o.node_names.push_back(v);
         return Status::Ok();
       }},
      {"--nodes", num("--nodes", &nodes)},
      {"--name-prefix", str(&prefix)},
      {"--gpus", num("--gpus", &o.gpus)},
      {"--block", str(&o.block)},
      {"--rack", str(&o.rack)},
      {"--launcher-binary", str(&o.launcher_binary)},
      {"--launcher-image", str(&o.launcher_image)},
      {"--python", str(&o.python)},
      {"--image-map",
       [&o](const std::string& v) -> Status {
         const size_t eq = v.find('=');
         if (eq == std::string::npos || eq == 0 || eq + 1 == v.size() || v[eq + 1] != '/') {
           return InvalidArgumentError("--image-map wants PREFIX=/ABSOLUTE/DIR, got " + v);
         }
         o.image_rules.push_back({v.substr(0, eq), v.substr(eq + 1)});
         return Status::Ok();
       }},
      {"--state-dir", str(&o.state_dir)},
      {"--bridge", str(&o.bridge)},
      {"--subnet", str(&o.subnet)},
      {"--heartbeat-ms", num("--heartbeat-ms", &o.heartbeat_ms)},
      {"--kubelet-port", num("--kubelet-port", &o.kubelet_port)},
      {"--lease-duration-s", num("--lease-duration-s", &o.lease_duration_s)},
      {"--partition-node", str(&o.partition_node)},
      {"--fail-node", str(&o.fail_node)},
      {"--image-layout", append(&o.image_layouts)},
      {"--import-image", str(&o.import_image)},
      {"--schedule-namespace", append(&o.schedule_namespaces)},
      {"--apiserver-proxy",
       [&o](const std::string& v) -> Status {
         if (v != "true" && v != "false") {
           return InvalidArgumentError("--apiserver-proxy wants true or false, got " + v);
         }
         o.apiserver_proxy = v == "true";
         return Status::Ok();
       }},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return InvalidArgumentError(flag + ": missing value");
    }
    auto it = flags.find(flag);
    if (it == flags.end()) return InvalidArgumentError("unknown flag " + flag);
    LS_RETURN_IF_ERROR(it->second(value));
  }
  for (int64_t i = 0; i < nodes; ++i) o.node_names.push_back(prefix + std::to_string(i));
  const bool control = !o.partition_node.empty() || !o.fail_node.empty() || !o.import_image.empty();
  if (!control && o.node_names.empty()) {
    return InvalidArgumentError("no nodes: pass --node-name or --nodes");
  }
  // The veth names are "<bridge>-<6 hex>" and must fit IFNAMSIZ (15 characters).
  if (o.bridge.empty() || o.bridge.size() > 8) {
    return InvalidArgumentError("--bridge must be 1-8 characters");
  }
  if (o.heartbeat_ms <= 0 || o.lease_duration_s <= 0) {
    return InvalidArgumentError("--heartbeat-ms and --lease-duration-s must be > 0");
  }
  if (o.kubelet_port > 65535) return InvalidArgumentError("--kubelet-port must be <= 65535");
  if (o.state_dir.empty() || o.state_dir[0] != '/') {
    return InvalidArgumentError("--state-dir must be an absolute path");
  }
  return o;
}

}  // namespace lockstep::e2e
