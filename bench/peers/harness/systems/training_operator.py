"""TO: Kubeflow training-operator v1.8.1 (PyTorchJob) + kube-scheduler (default profile).

Deployed as its manifests/base does: CRDs and RBAC from its module, the controller as a host
process with a token of its own ServiceAccount, its validating webhooks served on loopback and
registered by URL with their CA. The operator's cert rotator (always on in v1.8.1) finds the
Secret the harness made (valid for training-operator.<ns>.svc and 127.0.0.1, ten years) and keeps
it, writing it to its fixed cert dir. No gang scheduler: training-operator supports only Volcano
and scheduler-plugins for that, neither of which is served as a Go module here.
"""
import glob
import os

from .. import cluster as clusterlib
from . import base

NS = "kubeflow"
SA = "training-operator"


class TrainingOperator(base.System):
    key = "TO"
    title = "Kubeflow training-operator v1.8.1 (PyTorchJob) + kube-scheduler"
    label = "training.kubeflow.org/job-name"
    tuned_note = "pod tolerationSeconds 0 for unreachable/not-ready (default 300 s)"

    def install(self):
        c = self.cluster
        mod = os.path.join(clusterlib.tool_dir("training-operator"), "module/manifests/base")
        for crd in sorted(glob.glob(os.path.join(mod, "crds", "kubeflow.org_*.yaml"))):
            c.kubectl("apply", "--server-side", "--force-conflicts", "-f", crd)
        c.create_namespace(NS)
        kc = base.install_identity(self, os.path.join(mod, "rbac"), "", NS)
        port, cert_dir = base.register_webhooks(
            self, os.path.join(mod, "webhook"), "", f"training-operator.{NS}.svc",
            extra=base.rotator_secret("training-operator-webhook-cert", NS),
            name="validator.training-operator.kubeflow.org", ca_name="training-operator-ca")
        clusterlib.mount_rotator_certs(cert_dir)
        base.kube_scheduler(self)
        self.health = clusterlib.free_port()
        self.start("operator", [
            os.path.join(clusterlib.TOOLS_BIN, "training-operator"),
            "--metrics-bind-address", f"127.0.0.1:{clusterlib.free_port()}",
            "--health-probe-bind-address", f"127.0.0.1:{self.health}",
            "--webhook-server-port", str(port)],
            env={"KUBECONFIG": kc, "MY_POD_NAMESPACE": NS})
        base.wait_ready(self, self.health, "operator")

    def uninstall(self):
        self.stop_all()
        base.delete_webhooks(self)
        self.cluster.delete_namespace(NS)

    def collection(self):
        return "kubeflow.org/v1", "pytorchjobs"

    def render(self, job, ns, tuned=False):
        def replica(n):
            return {"replicas": n, "restartPolicy": "OnFailure",
                    "template": {"spec": base.pod_spec(job, "pytorch", tuned)}}
        specs = {"Master": replica(1)}
        if job.pods > 1:
            specs["Worker"] = replica(job.pods - 1)
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                "metadata": {"name": job.name, "namespace": ns},
                "spec": {"pytorchReplicaSpecs": specs}}

