// Ray: every pod runs one child, a small Python wrapper (kRayNode) that owns `ray start --block`.
// Node 0 is the head (GCS on its own address at master_port); the others join it. On the head
// the wrapper waits until all nnodes Ray nodes are alive, runs the user's entrypoint as the
// job's driver (RAY_ADDRESS set, on the head as Ray documents for a manual cluster) and exits
// with its code after stopping the cluster; so for the launcher core a Ray pod is one ordinary
// child whose exit code is the pod's (frameworks.h, step 3).
//
// The end of a job: on success the head's wrapper writes a key into the GCS's key-value store
// before it stops; each worker's wrapper polls for that key and then stops its node and exits 0.
// A failed entrypoint writes nothing: the head's launcher reports the failure to the rendezvous,
// whose abort ends the workers' launchers (peer-failed), exactly as for every other framework;
// a head lost mid-job closes the workers' rendezvous sessions (peer-lost). So a worker never
// reports success for a job that did not succeed.
//
// Knobs the wrapper reads from the pod's environment (the launcher passes its environment on):
//   LOCKSTEP_RAY_START_ARGS    extra `ray start` flags, shell-split, after ours (click keeps the
//                              last value of a repeated flag, so these win): --num-cpus, ports
//                              (several nodes on one machine need distinct ones), --temp-dir.
//   LOCKSTEP_RAY_WAIT_TIMEOUT  seconds the head waits for every node, and a worker for the head
//                              (default 300).

#include "launcher/frameworks/frameworks.h"
#include "launcher/frameworks/plan_util.h"

namespace lockstep::launcher::frameworks {
namespace {

// argv: role ("head"|"worker"), nnodes, own host, head host, GCS port, the `ray start` command
// (without addresses), "--", the entrypoint (head only).
//
// GcsClient is Ray's own client of the GCS (what `ray status` and ray.init use underneath); it
// lets the wrapper count nodes and read the end key without registering a Ray job, which would
// start worker processes on a 2-core test machine for nothing.
constexpr const char* kRayNode = R"PY(import os, shlex, signal, socket, subprocess, sys, time
role, nnodes, self_host, head_host = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
port, rest = int(sys.argv[5]), sys.argv[6:]
ray_start, entrypoint = rest[:rest.index("--")], rest[rest.index("--") + 1:]
deadline = time.monotonic() + float(os.environ.get("LOCKSTEP_RAY_WAIT_TIMEOUT", "300"))
DONE, NS = b"job_succeeded", b"lockstep"
ray = job = gcs = None

def log(msg):
    print("lockstep-ray: " + msg, file=sys.stderr, flush=True)

def resolve(host):  # Ray wants IP addresses; pods are known by DNS names that may lag
    while True:
        try:
            return socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0]
        except OSError as e:
            if time.monotonic() > deadline:
                log("cannot resolve %s: %s" % (host, e)); sys.exit(1)
            time.sleep(0.5)

def kill_descendants():  # whatever `ray start` left behind (it runs in our process group)
    import psutil
    for p in psutil.Process().children(recursive=True):
        try:
            p.kill()
        except psutil.Error:
            pass

def stop(code):
    for p in (job, ray):
        if p is not None and p.poll() is None:
            p.terminate()
    for p in (job, ray):
        try:
            p is not None and p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    kill_descendants()
    sys.exit(code)

def nodes():
    from ray.core.generated.gcs_pb2 import GcsNodeInfo
    try:
        infos = gcs.get_all_node_info(timeout=5).values()
    except Exception:
        return []
    return [n.node_manager_address for n in infos if n.state == GcsNodeInfo.ALIVE]

def succeeded():
    try:
        return gcs.internal_kv_get(DONE, NS, timeout=5) is not None
    except Exception:
        return False

def start_ray(args):
    # On SIGTERM `ray start` first drains its node for up to 30 s (for Ray Serve); a training
    # gang being stopped gains nothing from that, and a head already gone makes it wait it out.
    os.environ.setdefault("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", "0")
    user_args = shlex.split(os.environ.get("LOCKSTEP_RAY_START_ARGS", ""))
    return subprocess.Popen(ray_start + args + user_args)

signal.signal(signal.SIGTERM, lambda sig, frame: stop(128 + sig))
head_ip = resolve(head_host)
address = "%s:%d" % ("[%s]" % head_ip if ":" in head_ip else head_ip, port)
me = resolve(self_host)
if role == "head":
    ray = start_ray(["--node-ip-address=" + me])
# `ray start --address` gives its raylet a fixed 30 s to register: workers start it only once the
# head's GCS answers (and again below if it missed that window on a loaded machine).
while True:
    try:
        socket.create_connection((head_ip, port), timeout=2).close()
        break
    except OSError:
        if ray is not None and ray.poll() is not None:
            log("ray start exited with %d" % ray.returncode); stop(1)
        if time.monotonic() > deadline:
            log("Ray head %s not reachable" % address); stop(1)
        time.sleep(0.5)
from ray._raylet import GcsClient
gcs = GcsClient(address=address)

if role == "head":
    while len(nodes()) < nnodes:
        if ray.poll() is not None:
            log("ray start exited with %d before the cluster formed" % ray.returncode); stop(1)
        if time.monotonic() > deadline:
            log("only %d of %d Ray nodes joined" % (len(nodes()), nnodes)); stop(1)
        time.sleep(0.5)
    log("%d Ray nodes alive; running the entrypoint" % nnodes)
    job = subprocess.Popen(entrypoint, env=dict(os.environ, RAY_ADDRESS=address))
    while job.poll() is None:
        if ray.poll() is not None:
            log("the Ray head exited with %d under the job" % ray.returncode); stop(1)
        time.sleep(0.5)
    code = job.returncode if job.returncode >= 0 else 128 - job.returncode
    if code == 0:
        try:
            gcs.internal_kv_put(DONE, b"1", True, NS, timeout=5)
        except Exception as e:  # the workers then end when their raylets lose the GCS
            log("could not tell the workers the job succeeded: %s" % e)
        end = time.monotonic() + 20  # let the workers leave first, so none loses its head
        while len(nodes()) > 1 and time.monotonic() < end:
            time.sleep(0.5)
    log("entrypoint exited with %d; stopping the Ray head" % code)
    stop(code)

for attempt in range(1, 4):
    ray = start_ray(["--node-ip-address=" + me, "--address=" + address])
    joined = False
    while ray.poll() is None:
        if not joined:
            joined = me in nodes()
        elif succeeded():
            log("the job succeeded; stopping this Ray node")
            stop(0)
        time.sleep(0.5)
    if joined or attempt == 3 or time.monotonic() > deadline:
        rc = ray.returncode
        log("ray start exited with %d" % rc)
        stop(rc if rc > 0 else 128 - rc if rc < 0 else 1)
    log("ray start exited with %d before this node joined; starting it again" % ray.returncode)
    kill_descendants()
)PY";

}  // namespace

StatusOr<ChildPlan> PlanRay(const World& world, const std::vector<std::string>& command) {
  // Every pod needs only itself and the head (master_addr): no peer table.
  LS_RETURN_IF_ERROR(internal::ValidateWorld(world, command));
  if (world.master_addr.empty() || world.master_port <= 0) {
    return InvalidArgumentError("ray needs master_addr and master_port for the head's GCS");
  }
  const PeerInfo& self = world.self();
  const bool head = world.node_rank == 0;
  ChildProcess c;
  c.global_rank = self.first_rank;
  c.argv = {"python3",
            "-c",
            kRayNode,
            head ? "head" : "worker",
            std::to_string(world.nnodes),
            self.host,
            world.master_addr,
            std::to_string(world.master_port),
            "ray",
            "start",
            "--block",
            "--disable-usage-stats"};
  if (head) {
    c.argv.push_back("--head");
    c.argv.push_back("--port=" + std::to_string(world.master_port));
    // The entrypoint runs on the head as the driver; the dashboard (a web UI and the job API)
    // would cost a Python process per node for nothing. LOCKSTEP_RAY_START_ARGS can turn it on.
    c.argv.push_back("--include-dashboard=false");
  }
  if (self.port > 0) c.argv.push_back("--node-manager-port=" + std::to_string(self.port));
  c.argv.push_back("--");
  if (head) c.argv.insert(c.argv.end(), command.begin(), command.end());
  ChildPlan plan;
  plan.children.push_back(std::move(c));
  return plan;
}

}  // namespace lockstep::launcher::frameworks
