"""The kwok cluster the harness runs every system on, and the host processes it starts there.

The cluster comes from hack/cluster.sh (with kwok's pod stages minus "complete", so pods of Jobs
keep running like training pods instead of kwok finishing them at once). Every process a system
starts is registered in the cluster's pids/ folder, so `hack/cluster.sh down` stops whatever a
crashed harness left behind.
"""
import os
import signal
import socket
import subprocess
import time

from . import kube as kubelib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CACHE = os.environ.get("LOCKSTEP_CACHE",
                       os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                    "lockstep"))
TOOLS_BIN = os.path.join(CACHE, "tools", "bin")
DEAD_NODE_POLICY = os.path.join(REPO, "bench/peers/dead-node-policy.yaml")
DEAD_NODES = "/api/v1/namespaces/default/configmaps/bench-dead-nodes"
DEAD_NODE_BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
DEAD_NODE_BINDING_PATH = DEAD_NODE_BINDINGS + "/bench-dead-nodes"
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
DEAD_NODE_BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "bench-dead-nodes"},
    "spec": {"policyName": "bench-dead-nodes", "validationActions": ["Deny"],
             "paramRef": {"name": "bench-dead-nodes", "namespace": "default",
                          "parameterNotFoundAction": "Allow"}},
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=__import__("sys").stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tool_dir(binary):
    """The cached artifact folder a tools/bin link points into (its manifests sit beside it)."""
    return os.path.dirname(os.path.realpath(os.path.join(TOOLS_BIN, binary)))


def kwok_stages_file(out_dir):
    """kwok's own pod-ready stage from its module, and hack/kwok/pod-delete.yaml (kwok's delete
    without its second, by-name delete of a pod recreated under the same name); no pod-complete:
    pods of batch Jobs keep running like every other system's."""
    src = subprocess.run(["go", "mod", "download", "-json", f"sigs.k8s.io/kwok@{kwok_version()}"],
                         check=True, capture_output=True, text=True).stdout
    mod_dir = __import__("json").loads(src)["Dir"]
    path = os.path.join(out_dir, "kwok-stages.yaml")
    with open(path, "w") as f:
        for stage in (os.path.join(mod_dir, "kustomize/stage/pod/fast/pod-ready.yaml"),
                      os.path.join(REPO, "hack/kwok/pod-delete.yaml")):
            f.write("---\n")
            with open(stage) as s:
                f.write(s.read())
    return path


def kwok_version():
    return peer_version("KWOK_VERSION", "hack/lib/versions.sh")


def peer_version(var, script="hack/lib/peer-recipes.sh"):
    """A pinned version, read from the script that pins it (one source of truth)."""
    out = subprocess.run(["bash", "-c", f'source "{REPO}/{script}"; echo "${var}"'],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


class Cluster:
    def __init__(self, name, nodes, out_dir):
        self.name, self.nodes, self.out_dir = name, nodes, out_dir
        self.state = os.path.join(CACHE, "clusters", name)
        self.kubeconfig = os.path.join(self.state, "admin.kubeconfig")
        self.env = dict(os.environ, KUBECONFIG=self.kubeconfig,
                        PATH=TOOLS_BIN + ":" + os.environ["PATH"])
        self.api = None

    def up(self):
        # A cluster of that name left by an earlier run: started fresh, so kwok gets the stages.
        if os.path.isdir(self.state):
            self.down()
        stages = kwok_stages_file(self.out_dir)
        subprocess.run([os.path.join(REPO, "hack/cluster.sh"), "up", "--name", self.name,
                        "--nodes", str(self.nodes), "--kwok-stages", stages],
                       check=True, stdout=subprocess.DEVNULL)
        self.api = kubelib.Kube(self.kubeconfig)
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", DEAD_NODE_POLICY)
        self.api.create("/api/v1/namespaces/default/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "bench-dead-nodes"}, "data": {"-": "-"}})

    def down(self):
        subprocess.run([os.path.join(REPO, "hack/cluster.sh"), "down", "--name", self.name],
                       check=False)

    def kubectl(self, *args, input=None, check=True):
        out = subprocess.run(["kubectl", *args], env=self.env, input=input, text=True,
                             capture_output=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {out.stderr.strip()[-2000:]}")
        return out.stdout

    def apply(self, path_or_yaml, server_side=True):
        args = ["apply"] + (["--server-side", "--force-conflicts"] if server_side else [])
        if os.path.exists(path_or_yaml):
            return self.kubectl(*args, "-f", path_or_yaml)
        return self.kubectl(*args, "-f", "-", input=path_or_yaml)

    # ---- host processes -------------------------------------------------------------------

    def start(self, name, argv, env=None, cwd=None):
        """Starts argv in its own session, logs in <out>/logs/<name>.log, pid in pids/<name>."""
        os.makedirs(os.path.join(self.out_dir, "logs"), exist_ok=True)
        logf = open(os.path.join(self.out_dir, "logs", name + ".log"), "ab")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env=dict(self.env, **(env or {})), cwd=cwd)
        with open(os.path.join(self.state, "pids", name), "w") as f:
            f.write(str(proc.pid))
        return proc

    def stop(self, name, proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:
            os.remove(os.path.join(self.state, "pids", name))
        except FileNotFoundError:
            pass

    # ---- identities and certificates ------------------------------------------------------

    def service_account_kubeconfig(self, ns, sa, out):
        """A kubeconfig holding only a TokenRequest token of ns/sa (hack/lib/sa-kubeconfig.sh)."""
        subprocess.run(["bash", "-c", f"source {REPO}/hack/lib/sa-kubeconfig.sh && "
                        f"write_service_account_kubeconfig {ns} {sa} 24h {out}"],
                       env=self.env, check=True)
        return out

    def client_cert_kubeconfig(self, user, group, out):
        """A kubeconfig with a client certificate for user (as kubeadm writes scheduler.conf)."""
        pki = os.path.join(self.state, "pki")
        key, crt = out + ".key", out + ".crt"
        subj = f"/CN={user}" + (f"/O={group}" if group else "")
        run(["openssl", "genrsa", "-out", key, "2048"])
        run(["openssl", "req", "-new", "-key", key, "-subj", subj, "-out", out + ".csr"])
        ext = out + ".ext"
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=clientAuth\n")
        run(["openssl", "x509", "-req", "-in", out + ".csr", "-CA", f"{pki}/ca.crt", "-CAkey",
             f"{pki}/ca.key", "-CAcreateserial", "-days", "2", "-sha256", "-extfile", ext,
             "-out", crt])
        self.kubectl("config", "--kubeconfig", out, "set-cluster", "local",
                     f"--server=https://{self.api.host}:{self.api.port}",
                     f"--certificate-authority={pki}/ca.crt", "--embed-certs=true")
        self.kubectl("config", "--kubeconfig", out, "set-credentials", user,
                     f"--client-certificate={crt}", f"--client-key={key}", "--embed-certs=true")
        self.kubectl("config", "--kubeconfig", out, "set-context", "local", "--cluster=local",
                     f"--user={user}")
        self.kubectl("config", "--kubeconfig", out, "use-context", "local")
        return out

    # ---- nodes ----------------------------------------------------------------------------

    def node_names(self):
        items, _ = self.api.list("/api/v1/nodes", "type=kwok")
        return sorted((n["metadata"]["name"] for n in items), key=lambda s: int(s.rsplit("-", 1)[1]))

    def label_pool(self, pool, count):
        """Labels the first `count` nodes bench.lockstep.dev/pool=<pool>."""
        for name in self.node_names()[:count]:
            self.api.merge_patch(f"/api/v1/nodes/{name}",
                                 {"metadata": {"labels": {"bench.lockstep.dev/pool": pool}}})

    def set_pool(self, pool, names):
        """Exactly the nodes `names` carry bench.lockstep.dev/pool=<pool> (others lose it)."""
        have, _ = self.api.list("/api/v1/nodes", f"bench.lockstep.dev/pool={pool}")
        for n in have:
            if n["metadata"]["name"] not in names:
                self.api.merge_patch(f"/api/v1/nodes/{n['metadata']['name']}",
                                     {"metadata": {"labels": {"bench.lockstep.dev/pool": None}}})
        for name in names:
            self.api.merge_patch(f"/api/v1/nodes/{name}",
                                 {"metadata": {"labels": {"bench.lockstep.dev/pool": pool}}})

    def stop_heartbeat(self, node):
        """The node's kubelet dies: the apiserver refuses kwok's writes for it
        (bench/peers/dead-node-policy.yaml), so its Lease's renewTime freezes and its pods stay
        as they are."""
        if not self.api.exists(DEAD_NODE_BINDING_PATH):
            self.api.create(DEAD_NODE_BINDINGS, DEAD_NODE_BINDING)
        self.api.merge_patch(DEAD_NODES, {"data": {node: "dead"}})
        self._wait_dead(node)

    def _wait_dead(self, node, timeout=15):
        """Until the apiserver refuses kwok's write of the node's Lease (a dry run as kwok): the
        policy's binding and params reach admission through informers, and a policy that never
        takes effect (kubernetes/kubernetes#130887) would leave the node alive while a run
        counted it dead."""
        lease_path = f"{NODE_LEASES}/{node}"
        as_kwok = {"Impersonate-User": "kwok", "Impersonate-Group": "system:masters"}
        deadline = time.time() + timeout
        while time.time() < deadline:
            lease = self.api.get(lease_path)
            try:
                self.api.request("PUT", lease_path + "?dryRun=All", lease, extra_headers=as_kwok)
            except kubelib.ApiError as e:
                if "is dead" in e.body:
                    return
                if e.status != 409:
                    raise
            time.sleep(0.2)
        raise RuntimeError(f"{node}: the dead-node policy is not in effect after {timeout} s")

    def last_renewal(self, node):
        """The Lease's renewTime, seconds since the epoch (read before resume_heartbeat, it is
        the dead node's last heartbeat)."""
        lease = self.api.get(f"{NODE_LEASES}/{node}")
        return kubelib.rfc3339(lease["spec"]["renewTime"])

    def resume_heartbeat(self, node, wait=True):
        """Lets kwok write for the node again and (wait) waits until it is Ready without taints
        (without wait: restarts kwok at once and returns).
        kwok backs off from a Lease it failed to renew for a while and may not come back to it;
        then kwok is restarted (it re-syncs every node it manages)."""
        left = self.api.merge_patch(DEAD_NODES, {"data": {node: None}}).get("data", {})
        if not set(left) - {"-"}:  # no node dead: unbound, the policy costs nothing
            self.api.delete(DEAD_NODE_BINDING_PATH)
        if not wait:
            # --quick: the node was dead for the whole cap, long past kwok's back-off, and the
            # next system's settle() would wait a minute for it before restarting kwok. Restarted
            # now, kwok re-syncs while this system uninstalls; settle() waits for the rest.
            self._restart_kwok()
            return
        if self._wait_node_healthy(node, 20):
            return
        log(f"{node} not back 20 s after its heartbeat resumed: restarting kwok")
        self._restart_kwok()
        if not self._wait_node_healthy(node, 180):
            log(f"warning: {node} still not Ready without taints; it stays out of use")

    def _restart_kwok(self):
        """kwok re-syncs every node it manages when it starts (its Leases too)."""
        subprocess.run([os.path.join(REPO, "hack/cluster.sh"), "restart", "kwok", "--name",
                        self.name], check=True, capture_output=True)

    def _wait_node_healthy(self, node, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            n = self.api.get(f"/api/v1/nodes/{node}")
            ready = any(c["type"] == "Ready" and c["status"] == "True"
                        for c in n["status"].get("conditions", []))
            if ready and not n["spec"].get("taints"):
                return True
            time.sleep(1)
        return False

    def settle(self, max_age=15.0, timeout=60.0):
        """Waits until every live kwok node's Lease was renewed within max_age s and no node is
        tainted, so that each measured window starts on a healthy cluster. Deleting thousands of
        pods (the namespace of the run before) can starve kwok's Lease renewals for tens of
        seconds, and a system started then sees nodes lost (Lockstep's 20 s grace) or NotReady
        (the peers' node lifecycle); kwok may not come back to a Lease it backed off from, so
        after `timeout` kwok is restarted once."""
        t0 = time.time()
        for attempt in range(2):
            deadline = time.time() + (timeout if attempt == 0 else 180)
            while time.time() < deadline:
                bad = self._unsettled_nodes(max_age)
                if not bad:
                    if time.time() - t0 > 1:
                        log(f"cluster settled in {time.time() - t0:.0f} s")
                    return
                time.sleep(2)
            if attempt == 0:
                log(f"{len(bad)} nodes unsettled after {timeout:.0f} s (e.g. {bad[0]}): "
                    "restarting kwok")
                self._restart_kwok()
        log(f"warning: {len(bad)} nodes still unsettled (e.g. {bad[0]}); going on")

    def _unsettled_nodes(self, max_age):
        dead = set((self.api.get(DEAD_NODES).get("data") or {}).keys())
        leases, _ = self.api.list(NODE_LEASES)
        now = time.time()
        fresh = {l["metadata"]["name"] for l in leases
                 if l["spec"].get("renewTime")
                 and now - kubelib.rfc3339(l["spec"]["renewTime"]) <= max_age}
        nodes, _ = self.api.list("/api/v1/nodes", "type=kwok")
        return [n["metadata"]["name"] for n in nodes
                if n["metadata"]["name"] not in dead
                and (n["metadata"]["name"] not in fresh or n["spec"].get("taints"))]

    # ---- namespaces -----------------------------------------------------------------------

    def create_namespace(self, ns, labels=None):
        """Creates ns afresh (one an earlier, interrupted run left is deleted first)."""
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": labels or {}}}
        try:
            self.api.create("/api/v1/namespaces", body)
        except kubelib.ApiError as e:
            if e.status != 409:
                raise
            self.delete_namespace(ns)
            self.api.create("/api/v1/namespaces", body)

    def delete_namespace(self, ns, timeout=600):
        """Deletes ns and waits until it is gone; pods left on nodes kwok does not manage are
        force-deleted (a dead node's kubelet never confirms)."""
        self.api.delete(f"/api/v1/namespaces/{ns}")
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.api.exists(f"/api/v1/namespaces/{ns}"):
                return
            pods, _ = self.api.list(f"/api/v1/namespaces/{ns}/pods")
            for p in pods:
                if p["metadata"].get("deletionTimestamp"):
                    self.api.delete(f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}",
                                    {"gracePeriodSeconds": 0})
            time.sleep(2)
        log(f"warning: namespace {ns} still exists {timeout} s after its deletion")


def run(argv):
    subprocess.run(argv, check=True, capture_output=True)


def webhook_certs(out_dir, name, dns_names, ca_name=None):
    """A CA and a serving certificate for a webhook served on loopback: SANs 127.0.0.1 (the URL
    the apiserver calls) plus the Service DNS names a peer's own cert checks expect. Returns
    (cert_dir with tls.crt/tls.key/ca.crt, CA PEM bytes). ca_name: the name a cert rotator
    verifies the CA against (open-policy-agent/cert-controller checks it as a DNS SAN)."""
    d = os.path.join(out_dir, "certs", name)
    os.makedirs(d, exist_ok=True)
    # PKCS#1 keys (-traditional): the cert rotators of training-operator and Trainer parse the
    # CA key of an existing Secret only in that form; ten years, so they never rotate it away.
    run(["openssl", "genrsa", "-traditional", "-out", f"{d}/ca.key", "2048"])
    ca_cn = ca_name or f"{name}-ca"
    run(["openssl", "req", "-x509", "-new", "-key", f"{d}/ca.key", "-subj", f"/CN={ca_cn}",
         "-addext", f"subjectAltName=DNS:{ca_cn}", "-days", "3650", "-sha256",
         "-out", f"{d}/ca.crt"])
    run(["openssl", "genrsa", "-traditional", "-out", f"{d}/tls.key", "2048"])
    run(["openssl", "req", "-new", "-key", f"{d}/tls.key", "-subj", f"/CN={dns_names[0]}",
         "-out", f"{d}/tls.csr"])
    with open(f"{d}/ext", "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,"
                + ",".join("DNS:" + n for n in dns_names) + "\n")
    run(["openssl", "x509", "-req", "-in", f"{d}/tls.csr", "-CA", f"{d}/ca.crt", "-CAkey",
         f"{d}/ca.key", "-CAcreateserial", "-days", "3650", "-sha256", "-extfile", f"{d}/ext",
         "-out", f"{d}/tls.crt"])
    os.chmod(f"{d}/tls.key", 0o600)
    with open(f"{d}/ca.crt", "rb") as f:
        return d, f.read()


ROTATOR_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"


def mount_rotator_certs(cert_dir):
    """What the peer's Deployment does with a volume: its webhook Secret's files at the fixed
    path its cert rotator waits for (one such peer runs at a time here)."""
    import shutil
    shutil.rmtree(ROTATOR_CERT_DIR, ignore_errors=True)
    os.makedirs(ROTATOR_CERT_DIR)
    for f in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        shutil.copy(os.path.join(cert_dir, f), ROTATOR_CERT_DIR)
