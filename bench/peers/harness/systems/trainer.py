"""TR: Kubeflow Trainer v2.0.0 (TrainJob on the torch-distributed ClusterTrainingRuntime it
ships) + the JobSet v0.8.2 it requires + kube-scheduler (default profile). Its cert rotator finds
the Secret the harness made (valid for its Service name and 127.0.0.1) and keeps it."""
import os

from .. import cluster as clusterlib
from . import base, jobset

NS = "kubeflow-system"
JOBSET_NS = "jobset-system"
WEBHOOK_CONFIG = "validator.trainer.kubeflow.org"


class Trainer(base.System):
    key = "TR"
    title = "Kubeflow Trainer v2.0.0 (TrainJob) + JobSet v0.8.2 + kube-scheduler"
    label = "jobset.sigs.k8s.io/jobset-name"
    tuned_note = "pod tolerationSeconds 0 for unreachable/not-ready (podSpecOverrides)"

    def install(self):
        c = self.cluster
        c.create_namespace(JOBSET_NS)
        jobset.start_jobset(self, clusterlib.peer_version("TRAINER_JOBSET_VERSION"), JOBSET_NS)
        mod = os.path.join(clusterlib.tool_dir("trainer-controller-manager"), "module/manifests/base")
        # The folder's kustomization.yaml is no object: apply the files it lists.
        c.apply(base.to_yaml(base.kustomize_resources(os.path.join(mod, "crds"))))
        c.create_namespace(NS)
        kc = base.install_identity(self, os.path.join(mod, "rbac"), "", NS)
        port, cert_dir = base.register_webhooks(
            self, os.path.join(mod, "webhook"), "", f"kubeflow-trainer-controller-manager.{NS}.svc",
            extra=base.rotator_secret("kubeflow-trainer-webhook-cert", NS), name=WEBHOOK_CONFIG,
            ca_name="kubeflow-trainer-ca")
        clusterlib.mount_rotator_certs(cert_dir)
        base.kube_scheduler(self)
        health = clusterlib.free_port()
        self.start("trainer", [
            os.path.join(clusterlib.TOOLS_BIN, "trainer-controller-manager"),
            "--health-probe-bind-address", f"127.0.0.1:{health}",
            "--webhook-server-port", str(port)],
            env={"KUBECONFIG": kc, "POD_NAMESPACE": NS})
        base.wait_ready(self, health, "trainer", timeout=180)
        c.apply(os.path.join(mod, "runtimes/torch_distributed.yaml"))

    def uninstall(self):
        # Before the controller stops: it removes the runtime's resource-in-use finalizer (once
        # no TrainJob uses it); stopped first, the delete waited for it forever.
        c = self.cluster
        c.kubectl("delete", "clustertrainingruntimes.trainer.kubeflow.org", "--all",
                  "--timeout=60s", check=False)
        for name in c.kubectl("get", "clustertrainingruntimes.trainer.kubeflow.org", "-o", "name",
                              check=False).split():
            c.kubectl("patch", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                      check=False)
        self.stop_all()
        base.delete_webhooks(self)
        self.cluster.delete_namespace(NS)
        self.cluster.delete_namespace(JOBSET_NS)

    def collection(self):
        return "trainer.kubeflow.org/v1alpha1", "trainjobs"

    def render(self, job, ns, tuned=False):
        spec = base.pod_spec(job, "node", tuned)
        trainer = {"numNodes": job.pods, "image": spec["containers"][0]["image"],
                   "command": spec["containers"][0]["command"],
                   "resourcesPerNode": spec["containers"][0]["resources"]}
        out = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
               "metadata": {"name": job.name, "namespace": ns},
               "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer}}
        overrides = {k: spec[k] for k in ("nodeSelector", "tolerations") if k in spec}
        if overrides:
            out["spec"]["podSpecOverrides"] = [{"targetJobs": [{"name": "node"}], **overrides}]
        return out
