"""What every system has in common: how its manifests are read from its module, the pod template
every system's job gets (one workload definition, rendered per system), and its processes."""
import copy
import os

import yaml

from .. import cluster as clusterlib

# A user's kustomize overlay would give these a namespace and a name prefix; the harness does the
# same two edits (no kustomize binary here), nothing else.
NAMESPACED = {"ServiceAccount", "Role", "RoleBinding", "Secret", "ConfigMap", "Service"}
RBAC_NAMED = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"}


def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kustomize_resources(folder):
    """The documents a kustomization.yaml in folder lists (its `resources:` files); every YAML
    file of the folder where it has none."""
    kust_file = os.path.join(folder, "kustomization.yaml")
    if not os.path.exists(kust_file):
        return [d for f in sorted(os.listdir(folder)) if f.endswith(".yaml")
                for d in load_yaml_docs(os.path.join(folder, f))]
    with open(kust_file) as f:
        kust = yaml.safe_load(f)
    docs = []
    for res in kust.get("resources", []):
        p = os.path.join(folder, res)
        if os.path.isfile(p):
            docs += load_yaml_docs(p)
    return docs


def prefix_and_namespace(docs, prefix, namespace):
    """kustomize's namePrefix + namespace for RBAC objects and their references."""
    out = []
    for d in copy.deepcopy(docs):
        kind = d["kind"]
        if kind in RBAC_NAMED:
            d["metadata"]["name"] = prefix + d["metadata"]["name"]
        if kind in NAMESPACED:
            d["metadata"]["namespace"] = namespace
        if kind in ("RoleBinding", "ClusterRoleBinding"):
            d["roleRef"]["name"] = prefix + d["roleRef"]["name"]
            for s in d.get("subjects", []):
                if s["kind"] == "ServiceAccount":
                    s["name"] = prefix + s["name"]
                    s["namespace"] = namespace
        out.append(d)
    return out


def kustomize_webhooks(folder):
    """The webhook configurations of a module's webhook folder with its kustomization's patches
    applied (inline strategic-merge patches of named webhooks, and JSON 6902 patch files), as
    `kustomize build` would render them; the Service in front of them is left out."""
    with open(os.path.join(folder, "kustomization.yaml")) as f:
        kust = yaml.safe_load(f)
    docs = [d for d in load_yaml_docs(os.path.join(folder, "manifests.yaml"))
            if d["kind"].endswith("WebhookConfiguration")]
    for patch in kust.get("patches", []):
        target = patch.get("target", {})
        if "path" in patch:
            with open(os.path.join(folder, patch["path"])) as f:
                body = yaml.safe_load(f)
        else:
            body = yaml.safe_load(patch["patch"])
        for d in docs:
            if isinstance(body, list):  # JSON 6902
                if d["kind"] == target.get("kind") and target.get("name") in (None, d["metadata"]["name"]):
                    for op in body:
                        json_patch(d, op)
            elif d["kind"] == body["kind"] and d["metadata"]["name"] == body["metadata"]["name"]:
                by_name = {w["name"]: w for w in d["webhooks"]}
                for w in body.get("webhooks", []):
                    by_name[w["name"]].update(w)
    return docs


def json_patch(doc, op):
    """One replace/add operation of RFC 6902 (the subset kustomize patches here use)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    last = parts[-1]
    if op["op"] not in ("replace", "add"):
        raise ValueError(f"unsupported patch op {op['op']}")
    if isinstance(node, list):
        if op["op"] == "add" and last == "-":
            node.append(op["value"])
        elif op["op"] == "add":
            node.insert(int(last), op["value"])
        else:
            node[int(last)] = op["value"]
    else:
        node[last] = op["value"]


def webhooks_by_url(docs, prefix, port, ca_pem, name=None):
    """Webhook configurations registered by URL on loopback with their CA, as a peer's webhook
    server runs as a host process here (no Service in front of it)."""
    import base64
    out = []
    for d in copy.deepcopy(docs):
        d["metadata"]["name"] = name or prefix + d["metadata"]["name"]
        for w in d["webhooks"]:
            path = w["clientConfig"]["service"].get("path", "/")
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                                 "caBundle": base64.b64encode(ca_pem).decode()}
        out.append(d)
    return out


def to_yaml(docs):
    return yaml.safe_dump_all(docs, sort_keys=False)


def resources(gpus):
    r = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        r["nvidia.com/gpu"] = str(gpus)
    return {"requests": dict(r), "limits": dict(r)}


def pod_spec(job, container_name, tuned=False):
    """The one pod template every system's job gets: a trainer container asking job.gpus GPUs,
    the workload's node pool, and (tuned node-loss variant) eviction 0 s after the node is found
    unreachable instead of Kubernetes' default 300 s."""
    spec = {"containers": [{"name": container_name, "image": "bench/trainer:1",
                            "command": ["python", "train.py"],
                            "resources": resources(job.gpus)}]}
    if job.pool:
        spec["nodeSelector"] = {"bench.lockstep.dev/pool": job.pool}
    if tuned:
        spec["tolerations"] = [{"key": k, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 0}
                               for k in ("node.kubernetes.io/unreachable",
                                         "node.kubernetes.io/not-ready")]
    return spec


class System:
    """One system under test. Subclasses set `key` (the table's short name), `label` (the pod
    label naming a pod's job) and implement install/uninstall/render."""
    key = ""
    title = ""
    label = ""
    tuned_note = ""

    def __init__(self, cluster, out_dir):
        self.cluster, self.out_dir = cluster, out_dir
        self.procs = {}
        self.webhook_configs = []

    def start(self, name, argv, env=None):
        self.procs[name] = self.cluster.start(f"{self.key}-{name}", argv, env=env)

    def stop_all(self):
        for name, proc in self.procs.items():
            self.cluster.stop(f"{self.key}-{name}", proc)
        self.procs = {}

    def alive(self):
        return all(p.poll() is None for p in self.procs.values())

    def pids(self):
        return {name: p.pid for name, p in self.procs.items()}

    def job_of(self, pod):
        return pod["metadata"].get("labels", {}).get(self.label)

    def prepare_namespace(self, ns, workload):
        """Per-namespace objects a job needs before it is created (Kueue's LocalQueue)."""

    def render(self, job, ns, tuned=False):
        raise NotImplementedError

    def launchers(self, ns, job):
        """The in-pod processes that watch the job's peers (workload 3), started for job; None
        where the system's pods have none that act on a lost node."""
        return None

    def evidence(self, name):
        """Saves what the system exposes about where its time went (its metrics) as <name>."""

    def collection(self):
        """API path segment of the system's job kind: (group/version, plural)."""
        raise NotImplementedError

    def log_path(self, name):
        return os.path.join(self.out_dir, "logs", f"{self.key}-{name}.log")


def install_identity(system, rbac_folder, prefix, ns):
    """The peer's RBAC from its module (kustomize prefix and namespace), and a kubeconfig that
    holds only a token of the ServiceAccount it names."""
    rbac = prefix_and_namespace(kustomize_resources(rbac_folder), prefix, ns)
    system.cluster.apply(to_yaml(rbac))
    sa = next(d["metadata"]["name"] for d in rbac if d["kind"] == "ServiceAccount")
    return system.cluster.service_account_kubeconfig(
        ns, sa, os.path.join(system.out_dir, f"{system.key}-{sa}.kubeconfig"))


def register_webhooks(system, webhook_folder, prefix, service_dns, extra=(), name=None,
                      ca_name=None):
    """Serving certificates for the peer's webhook server on loopback and its webhook
    configurations registered by URL (applied with `extra` documents, e.g. its cert Secret, which
    may be built from the certificate folder: extra(cert_dir) -> docs). Returns (port,
    cert_dir); the configurations are deleted by the system's uninstall."""
    port = clusterlib.free_port()
    cert_dir, ca = clusterlib.webhook_certs(system.out_dir, f"{system.key}-{prefix or 'hooks'}",
                                            [service_dns], ca_name=ca_name)
    hooks = webhooks_by_url(kustomize_webhooks(webhook_folder), prefix, port, ca, name=name)
    system.cluster.apply(to_yaml((list(extra(cert_dir)) if extra else []) + hooks))
    system.webhook_configs += [(h["kind"], h["metadata"]["name"]) for h in hooks]
    return port, cert_dir


def write_config(system, shipped, name, updates):
    """The peer's shipped Configuration file with `updates` merged in (maps key by key), written
    to the run's folder; returns its path."""
    def merge(into, new):
        for k, v in new.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                merge(into[k], v)
            else:
                into[k] = v
    with open(shipped) as f:
        cfg = yaml.safe_load(f)
    merge(cfg, updates)
    path = os.path.join(system.out_dir, name + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def rotator_secret(name, namespace):
    """extra= for register_webhooks: the webhook Secret a cert rotator reads (training-operator,
    Trainer), from the certificates made for it."""
    import base64

    def docs(cert_dir):
        data = {}
        for k in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
            with open(os.path.join(cert_dir, k), "rb") as f:
                data[k] = base64.b64encode(f.read()).decode()
        return [{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                 "metadata": {"name": name, "namespace": namespace}, "data": data}]
    return docs


def delete_webhooks(system):
    for kind, name in system.webhook_configs:
        system.cluster.kubectl("delete", kind.lower(), name, "--ignore-not-found")
    system.webhook_configs = []


def wait_ready(system, port, name, timeout=120, path="/readyz"):
    """Polls a process's health endpoint on loopback until it answers 200."""
    import time
    import urllib.request
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not system.alive():
            raise RuntimeError(f"{system.key} {name} exited; see {system.log_path(name)}")
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{system.key} {name} not ready in {timeout} s; see {system.log_path(name)}")


def kube_scheduler(system, port_note=""):
    """kube-scheduler with its default profile, as kubeadm runs it: its own client-certificate
    identity (system:kube-scheduler, bound by the bootstrap RBAC), secure port on loopback."""
    c = system.cluster
    kc = c.client_cert_kubeconfig("system:kube-scheduler", None,
                                  os.path.join(system.out_dir, "kube-scheduler.kubeconfig"))
    system.start("kube-scheduler", [
        os.path.join(clusterlib.TOOLS_BIN, "kube-scheduler"), "--kubeconfig", kc,
        "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
        "--bind-address", "127.0.0.1", "--secure-port", str(clusterlib.free_port()),
        "--leader-elect=false", "--v", "0"])
