"""Real lockstep-launchers for the pods of one Lockstep job (bench/peers/gang/, a C++ helper over
stdin), so workload 3's lost node is seen by its peers' launchers as in a user's pods. kwok pods
run no process; without this only the Lease grace could tell Lockstep a node is gone. Needs root
(each pod's IP on lo, iptables for the silent death) and the helper built beside the operator."""
import base64
import json
import os
import subprocess
import time

from . import kube as kubelib
from .cluster import log

HELPER = "bin/peers_launcher_gang"


def available(build_dir):
    """Why launchers cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root (the helper adds pod IPs to lo and iptables rules)"
    if not os.access(os.path.join(build_dir, HELPER), os.X_OK):
        return f"{os.path.join(build_dir, HELPER)} not built"
    return None


def node_rank(pod):
    """A one-role job's pod of replica index i is node rank i (operator/api/children.h)."""
    index = pod["metadata"].get("labels", {}).get("lockstep.dev/replica-index")
    return int(index) if index is not None else None


class Gang:
    """The helper process for one job: started when every pod has its IP, frozen per node."""

    def __init__(self, cluster, build_dir, ns, job, procs_per_pod, out_dir):
        api = cluster.api
        tj = api.get(f"/apis/lockstep.dev/v1alpha1/namespaces/{ns}/trainingjobs/{job}")
        secret = api.get(f"/api/v1/namespaces/{ns}/secrets/{job}-rdzv")
        pods = self._pods(api, ns, job, tj["spec"]["replicas"])
        # Every rank a node holds: a gang packed onto one 8-GPU node has all 8 of them there.
        self.ranks = {}
        for i, p in enumerate(pods):
            self.ranks.setdefault(p["node"], []).append(i)
        self.dir = os.path.join(out_dir, "gangs", f"{ns}-{job}")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = subprocess.Popen([os.path.join(build_dir, HELPER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=self.dir)
        self._send(json.dumps({"run_id": tj["metadata"]["uid"], "dir": self.dir,
                               "token": base64.b64decode(secret["data"]["token"]).decode(),
                               "nproc": procs_per_pod, "pods": pods}))
        self._expect("ready")
        self._wait_polled(api, ns, job)

    @staticmethod
    def _pods(api, ns, job, replicas, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            items, _ = api.list(kubelib.pods_path(ns), selector=f"lockstep.dev/job-name={job}")
            pods = sorted((p for p in items if node_rank(p) is not None
                           and p["status"].get("podIP")
                           and not p["metadata"].get("deletionTimestamp")), key=node_rank)
            if len(pods) == replicas:
                return [{"name": p["metadata"]["name"], "ip": p["status"]["podIP"],
                         "node": p["spec"]["nodeName"], "uid": p["metadata"]["uid"]}
                        for p in pods]
            time.sleep(0.2)
        raise RuntimeError(f"{job}: its {replicas} pods have no IPs after {timeout} s")

    @staticmethod
    def _wait_polled(api, ns, job, timeout=30):
        """Until the operator's launcher monitor has read the running round (status.rendezvous):
        before that it holds no report to act on."""
        deadline = time.time() + timeout
        path = f"/apis/lockstep.dev/v1alpha1/namespaces/{ns}/trainingjobs/{job}"
        while time.time() < deadline:
            if api.get(path).get("status", {}).get("rendezvous"):
                return
            time.sleep(0.2)
        log(f"warning: {job}: the operator had not polled its launchers after {timeout} s")

    def _send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _expect(self, word):
        got = self.proc.stdout.readline().strip()
        if got != word:
            self.close()
            raise RuntimeError(f"launcher gang: {got or 'exited'} (logs in {self.dir})")

    def freeze(self, node):
        """The node dies without a word: every launcher of the gang on it stops answering
        (SIGSTOP, its packets dropped), whatever the placement. The freezes are sent together and
        their answers read after, so the node's ranks stop within the helper's few iptables calls
        of each other (far under the launchers' 3-s peer timeout). Returns the ranks frozen."""
        ranks = self.ranks.get(node, [])
        for i in ranks:
            self.proc.stdin.write(f"freeze {i}\n")
        self.proc.stdin.flush()
        for _ in ranks:
            self._expect("frozen")
        return list(ranks)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
