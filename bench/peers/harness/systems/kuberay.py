"""KR: KubeRay v1.5.0 (RayCluster) + kube-scheduler (default profile), for the Ray row. Deployed
as its config/default does: CRDs and RBAC from its module, no webhooks."""
import os

from .. import cluster as clusterlib
from . import base

NS = "ray-system"


class KubeRay(base.System):
    key = "KR"
    title = "KubeRay v1.5.0 (RayCluster) + kube-scheduler"
    label = "ray.io/cluster"

    def install(self):
        c = self.cluster
        mod = os.path.join(clusterlib.tool_dir("kuberay-operator"), "module/config")
        c.kubectl("apply", "--server-side", "--force-conflicts", "-f", os.path.join(mod, "crd/bases"))
        c.create_namespace(NS)
        kc = base.install_identity(self, os.path.join(mod, "rbac"), "", NS)
        base.kube_scheduler(self)
        health = clusterlib.free_port()
        self.start("operator", [
            os.path.join(clusterlib.TOOLS_BIN, "kuberay-operator"),
            "--metrics-addr", f"127.0.0.1:{clusterlib.free_port()}",
            "--health-probe-bind-address", f"127.0.0.1:{health}",
            "--leader-election-namespace", NS],
            env={"KUBECONFIG": kc, "POD_NAMESPACE": NS})
        base.wait_ready(self, health, "operator")

    def uninstall(self):
        self.stop_all()
        self.cluster.delete_namespace(NS)

    def collection(self):
        return "ray.io/v1", "rayclusters"

    def render(self, job, ns, tuned=False):
        def group(name):
            spec = base.pod_spec(job, name, tuned)
            spec["containers"][0]["image"] = "bench/ray:1"
            return {"rayStartParams": {}, "template": {"spec": spec}}
        workers = dict(group("ray-worker"), groupName="workers", replicas=job.pods - 1,
                       minReplicas=job.pods - 1, maxReplicas=job.pods - 1)
        return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": {"name": job.name, "namespace": ns},
                "spec": {"headGroupSpec": group("ray-head"), "workerGroupSpecs": [workers]}}
