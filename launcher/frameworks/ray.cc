// Ray: every pod runs one `ray start --block` (a kService child); node 0 is the head (GCS on
// master_addr:master_port), the others join it once the head's GCS accepts connections. On the
// head the user's entrypoint runs as the driver of a Ray job, after a short wait until all pods'
// nodes are alive, with RAY_ADDRESS pointing at the cluster; its exit code is the pod's (see
// frameworks.h, step 3).
//
// world.extra: "ray.ray" (the ray CLI, default "ray"), "ray.python" (interpreter for the
// waits, default "python3"), "ray.num_cpus", "ray.wait_timeout" (seconds, default
// 300), "ray.start_args" (extra `ray start` flags for every pod, space-separated) and
// "ray.start_args.<node rank>" (for one pod: several pods on one machine need distinct
// --object-manager-port, --dashboard-agent-listen-port, ... since Ray's defaults are fixed).

#include <sstream>

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks {
namespace {

// Waits until argv[1] nodes are alive, then becomes the entrypoint (argv[3:]).
constexpr const char* kWaitForNodes = R"PY(import os, sys, time
import ray
want, deadline = int(sys.argv[1]), time.time() + float(sys.argv[2])
ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR", log_to_driver=False)
while sum(1 for n in ray.nodes() if n["Alive"]) < want:
    if time.time() > deadline:
        sys.exit("lockstep: only %d of %d Ray nodes joined" %
                 (sum(1 for n in ray.nodes() if n["Alive"]), want))
    time.sleep(0.2)
ray.shutdown()
os.execvp(sys.argv[3], sys.argv[3:])
)PY";

// Waits until the head's GCS accepts connections (argv[1]:argv[2], for argv[3] seconds), then
// becomes `ray start` (argv[4:]). `ray start --address` gives its raylet a fixed 30 s to register,
// which a head still starting up can exceed; KubeRay waits in an init container for the same
// reason.
constexpr const char* kWaitForHead = R"PY(import os, socket, sys, time
host, port, deadline = sys.argv[1], int(sys.argv[2]), time.time() + float(sys.argv[3])
while True:
    try:
        socket.create_connection((host, port), timeout=2).close()
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("lockstep: Ray head %s:%d not reachable" % (host, port))
        time.sleep(0.5)
os.execvp(sys.argv[4], sys.argv[4:])
)PY";

std::vector<std::string> SplitArgs(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string arg; in >> arg;) out.push_back(arg);
  return out;
}

ChildProcess RayStart(const World& world) {
  const PeerInfo& self = world.self();
  ChildProcess c;
  c.kind = ChildProcess::Kind::kService;
  c.global_rank = -1;
  c.argv = {internal::Extra(world, "ray.ray", "ray"), "start", "--block", "--disable-usage-stats",
            "--node-ip-address=" + self.host};
  if (world.node_rank == 0) {
    c.argv.push_back("--head");
    c.argv.push_back("--port=" + std::to_string(world.master_port));
    c.argv.push_back("--include-dashboard=false");
  } else {
    c.argv.push_back("--address=" + internal::HostPort(world.master_addr, world.master_port));
  }
  if (self.port > 0) c.argv.push_back("--node-manager-port=" + std::to_string(self.port));
  const std::string cpus = internal::Extra(world, "ray.num_cpus", "");
  if (!cpus.empty()) c.argv.push_back("--num-cpus=" + cpus);
  const std::string per_pod = "ray.start_args." + std::to_string(world.node_rank);
  for (const std::string& key : {std::string("ray.start_args"), per_pod}) {
    for (std::string& a : SplitArgs(internal::Extra(world, key, "")))
      c.argv.push_back(std::move(a));
  }
  if (world.node_rank != 0) {
    std::vector<std::string> wait = {internal::Extra(world, "ray.python", "python3"),
                                     "-c",
                                     kWaitForHead,
                                     world.master_addr,
                                     std::to_string(world.master_port),
                                     internal::Extra(world, "ray.wait_timeout", "300")};
    c.argv.insert(c.argv.begin(), wait.begin(), wait.end());
  }
  return c;
}

}  // namespace

StatusOr<ChildPlan> PlanRay(const World& world, const std::vector<std::string>& command) {
  // Every pod needs only itself and the head (master_addr): no peer table.
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  if (world.master_addr.empty() || world.master_port <= 0) {
    return InvalidArgumentError("ray needs master_addr and master_port for the head's GCS");
  }
  ChildPlan plan;
  plan.children.push_back(RayStart(world));
  if (world.node_rank != 0) return plan;

  ChildProcess driver;
  driver.global_rank = 0;
  driver.argv = {internal::Extra(world, "ray.python", "python3"), "-c", kWaitForNodes,
                 std::to_string(world.nnodes), internal::Extra(world, "ray.wait_timeout", "300")};
  driver.argv.insert(driver.argv.end(), command.begin(), command.end());
  driver.env["RAY_ADDRESS"] = internal::HostPort(world.master_addr, world.master_port);
  plan.driver = std::move(driver);
  return plan;
}

}  // namespace lockstep::launcher::frameworks
