"""JS+KU: JobSet v0.11.1 + Kueue v0.17.0 + kube-scheduler (default profile).

Kueue runs with its shipped Configuration except: its webhook on loopback with certificates made
here (internalCertManagement off), waitForPodsReady on (all-or-nothing admission, as Kueue's docs
recommend for gangs), and the integrations a JobSet user enables (batch/job, jobset). One
ClusterQueue whose GPU quota is the capacity of the nodes the workload may use; a Topology
(block, rack, hostname) and a topology-aware flavor where the workload asks for a topology.
"""
import os
import subprocess

from .. import cluster as clusterlib
from . import base, jobset

NS = "kueue-system"
JOBSET_NS = "jobset-system"
TOPOLOGY_LEVELS = ["topology.lockstep.dev/block", "topology.lockstep.dev/rack",
                   "kubernetes.io/hostname"]


class JobSetKueue(base.System):
    key = "KU"
    title = "JobSet v0.11.1 + Kueue v0.17.0 + kube-scheduler"
    label = "jobset.sigs.k8s.io/jobset-name"

    @property
    def tuned_note(self):
        return ("pod tolerationSeconds 0 for unreachable/not-ready, JobSet failurePolicy "
                "maxRestarts 3" + (", Kueue waitForPodsReady recoveryTimeout 10s"
                                   if self.tuned_kueue else ""))

    def __init__(self, cluster, out_dir, tuned_kueue=False):
        super().__init__(cluster, out_dir)
        self.tuned_kueue = tuned_kueue

    def install(self):
        c = self.cluster
        c.create_namespace(JOBSET_NS)
        jobset.start_jobset(self, clusterlib.peer_version("KUEUE_JOBSET_VERSION"), JOBSET_NS)
        mod = os.path.join(clusterlib.tool_dir("kueue"), "module/config/components")
        c.kubectl("apply", "--server-side", "--force-conflicts", "-f",
                  os.path.join(mod, "crd/bases"))
        c.create_namespace(NS)
        kc = base.install_identity(self, os.path.join(mod, "rbac"), "kueue-", NS)
        port, cert_dir = base.register_webhooks(self, os.path.join(mod, "webhook"), "kueue-",
                                                f"kueue-webhook-service.{NS}.svc")
        # Kueue's metrics certificate sits at a fixed path (made once per machine by the same
        # function hack/cluster.sh uses for the test tiers' Kueue).
        subprocess.run(["bash", "-c", f'source "{clusterlib.REPO}/hack/lib/common.sh" && '
                        f'source "{clusterlib.REPO}/hack/lib/cluster-kueue.sh" && '
                        "kueue_metrics_certs"], check=True)
        health = clusterlib.free_port()
        pods_ready = {"timeout": "5m"}
        if self.tuned_kueue:
            pods_ready["recoveryTimeout"] = "10s"
        cfg_path = base.write_config(
            self, os.path.join(mod, "manager/controller_manager_config.yaml"), "kueue", {
                "namespace": NS,
                "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
                "metrics": {"bindAddress": f"127.0.0.1:{clusterlib.free_port()}"},
                "webhook": {"port": port, "host": "127.0.0.1", "certDir": cert_dir},
                "internalCertManagement": {"enable": False},
                "waitForPodsReady": pods_ready,
                "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
                "leaderElection": {"resourceNamespace": NS},
                # On by default in v0.17: its pending-workloads API server wants certificates in
                # /visibility and 0.0.0.0:8082; the bench reads nothing from it.
                "featureGates": {"VisibilityOnDemand": False},
            })
        base.kube_scheduler(self)
        self.start("kueue", [os.path.join(clusterlib.TOOLS_BIN, "kueue"), "--config", cfg_path],
                   env={"KUBECONFIG": kc, "POD_NAMESPACE": NS})
        base.wait_ready(self, health, "kueue", timeout=180)

    def uninstall(self):
        self.stop_all()
        base.delete_webhooks(self)
        for kind in ("clusterqueues", "resourceflavors", "topologies"):
            self.cluster.kubectl("delete", f"{kind}.kueue.x-k8s.io", "--all", "--wait=false",
                                 check=False)
        self.cluster.delete_namespace(NS)
        self.cluster.delete_namespace(JOBSET_NS)

    def prepare_namespace(self, ns, workload):
        """One ClusterQueue with the GPU quota of the nodes this workload may use, a flavor
        (topology-aware where the workload asks for a topology) and a LocalQueue in ns."""
        c = self.cluster
        gpus, cpu, mem = workload.capacity_gpus, workload.capacity_gpus * 12, workload.capacity_gpus * 192
        flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                  "metadata": {"name": "gpu"}, "spec": {}}
        if workload.pool:
            flavor["spec"]["nodeLabels"] = {"bench.lockstep.dev/pool": workload.pool}
        docs = []
        if workload.topology:
            docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                         "metadata": {"name": "default"},
                         "spec": {"levels": [{"nodeLabel": l} for l in TOPOLOGY_LEVELS]}})
            flavor["spec"]["topologyName"] = "default"
            flavor["spec"].setdefault("nodeLabels", {})["type"] = "kwok"
        docs += [flavor, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [{"name": "gpu", "resources": [
                    {"name": "cpu", "nominalQuota": str(cpu)},
                    {"name": "memory", "nominalQuota": f"{mem}Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]}]}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "lq", "namespace": ns}, "spec": {"clusterQueue": "cq"}}]
        c.apply(base.to_yaml(docs))

    def collection(self):
        return "jobset.x-k8s.io/v1alpha2", "jobsets"

    def render(self, job, ns, tuned=False):
        annotations = ({"kueue.x-k8s.io/podset-preferred-topology": "topology.lockstep.dev/rack"}
                       if job.topology else None)
        return jobset.jobset_render(job, ns, tuned, "trainer",
                                    labels={"kueue.x-k8s.io/queue-name": "lq"},
                                    annotations=annotations,
                                    tuned_policy={"maxRestarts": 3})

