"""L: Lockstep, release build: the Helm chart installed as a user installs it, the operator (with
its gang scheduler) run as a host process with the chart's flags and a token of the chart's
ServiceAccount only (as hack/demo.sh does: no container runtime here)."""
import os
import subprocess
import time
import urllib.request

from .. import cluster as clusterlib
from .. import gang as ganglib
from . import base

NS = "lockstep-system"
RELEASE = "lockstep"


class Lockstep(base.System):
    key = "L"
    title = "Lockstep (operator + gang scheduler)"
    label = "lockstep.dev/job-name"
    tuned_note = "defaults only (--node-lease-grace 20s, launchers' --peer-timeout 3s)"
    # Extra Helm values (--set) the chart is installed with.
    helm_sets = ()

    def __init__(self, cluster, out_dir, build_dir, helm_sets=(), env=()):
        super().__init__(cluster, out_dir)
        self.build_dir = build_dir
        self.helm_sets = tuple(self.helm_sets) + tuple(helm_sets)
        # Extra environment of the operator process (--lockstep-env), e.g. malloc tunables.
        self.env = dict(v.split("=", 1) for v in env)

    def install(self):
        c = self.cluster
        c.kubectl("apply", "--server-side", "--force-conflicts", "-f",
                  os.path.join(clusterlib.REPO, "crds"))
        subprocess.run(["helm", "upgrade", "--install", RELEASE,
                        os.path.join(clusterlib.REPO, "helm/lockstep"), "-n", NS,
                        "--create-namespace", "--set", "crds.install=false",
                        *[a for v in self.helm_sets for a in ("--set", v)]],
                       env=c.env, check=True, capture_output=True)
        c.kubectl("-n", NS, "scale", "deployment", RELEASE, "--replicas", "0")
        args = c.kubectl("-n", NS, "get", "deployment", RELEASE, "-o",
                         "go-template={{range (index .spec.template.spec.containers 0).args}}"
                         "{{.}}{{\"\\n\"}}{{end}}").split()
        self.metrics = f"127.0.0.1:{clusterlib.free_port()}"
        args = [a for a in args if not a.startswith(("--metrics-bind-address=",
                                                     "--health-probe-bind-address=",
                                                     "--log-format="))]
        self.health = clusterlib.free_port()
        args += [f"--metrics-bind-address={self.metrics}",
                 f"--health-probe-bind-address=127.0.0.1:{self.health}",
                 "--log-format=text"]
        kc = c.service_account_kubeconfig(NS, RELEASE, os.path.join(self.out_dir, "L.kubeconfig"))
        self.start("operator", [os.path.join(self.build_dir, "bin/lockstep-operator"),
                                "--kubeconfig", kc, *args], env={"POD_NAMESPACE": NS, **self.env})
        # Ready as every system is: its own readiness endpoint (its caches, the scheduler's
        # too, synced), and, as only the leader's workers run, leading.
        base.wait_ready(self, self.health, "operator", timeout=90)
        self._wait_leader()

    def _wait_leader(self, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.alive():
                raise RuntimeError(f"lockstep-operator exited; see {self.log_path('operator')}")
            try:
                text = urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=2).read()
                if any(l.startswith("leader_election_master_status") and l.rstrip().endswith(" 1")
                       for l in text.decode().splitlines()):
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError("lockstep-operator did not lead within 90 s")

    def launchers(self, ns, job):
        """Real lockstep-launchers for the job's pods (gang.py), as every Lockstep pod runs one:
        a silent node is reported by its peers' launchers (docs/failures.md "Peer evidence")."""
        why = ganglib.available(self.build_dir)
        if why:
            clusterlib.log(f"L node loss without launchers: {why}")
            return None
        return ganglib.Gang(self.cluster, self.build_dir, ns, job, 1, self.out_dir)

    def evidence(self, name):
        try:
            text = urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5).read()
        except OSError:
            return
        with open(os.path.join(self.out_dir, f"{self.key}-{name}.metrics"), "wb") as f:
            f.write(text)

    def uninstall(self):
        self.stop_all()
        subprocess.run(["helm", "uninstall", RELEASE, "-n", NS], env=self.cluster.env,
                       capture_output=True)
        self.cluster.delete_namespace(NS)

    def collection(self):
        return "lockstep.dev/v1alpha1", "trainingjobs"

    def render(self, job, ns, tuned=False):
        spec = {"framework": "PyTorch" if not job.ray else "Ray",
                "replicas": job.pods - (1 if job.ray else 0),
                "procsPerPod": 1,
                "template": {"spec": base.pod_spec(job, "trainer")}}
        if job.ray:
            spec["roles"] = [{"name": "head", "replicas": 1, "procsPerPod": 1,
                              "template": {"spec": base.pod_spec(job, "trainer")}}]
        if job.topology:
            spec["placement"] = {"topologyKeys": ["topology.lockstep.dev/block",
                                                  "topology.lockstep.dev/rack"]}
        return {"apiVersion": "lockstep.dev/v1alpha1", "kind": "TrainingJob",
                "metadata": {"name": job.name, "namespace": ns}, "spec": spec}


class LockstepBound(Lockstep):
    """LB: Lockstep with gangs created unplaced and then bound (operator.createPlaced=false, the
    path before issue 16), to compare with L in the same run."""
    key = "LB"
    title = "Lockstep, created then bound (--create-placed=false)"
    helm_sets = ("operator.createPlaced=false",)
