"""JobSet's controller as a host process (shared by JS+KU and TR): CRDs, RBAC (kustomize's
"jobset-" prefix) and webhooks from the JobSet module the peer pins, its shipped Configuration
with the webhook on loopback and the certificates made here instead of its internal cert
management, and a token of its own ServiceAccount."""
import os

from .. import cluster as clusterlib
from . import base


def jobset_render(job, ns, tuned, pod_container, labels=None, annotations=None, tuned_policy=None):
    template = {"spec": dict(base.pod_spec(job, pod_container, tuned), restartPolicy="Never")}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    spec = {"replicatedJobs": [{
        "name": "node", "replicas": 1,
        "template": {"spec": {"parallelism": job.pods, "completions": job.pods,
                              "completionMode": "Indexed", "template": template}}}]}
    if tuned and tuned_policy:
        spec["failurePolicy"] = tuned_policy
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": job.name, "namespace": ns, "labels": labels or {}},
            "spec": spec}


def start_jobset(system, version, ns):
    c = system.cluster
    mod = os.path.join(clusterlib.tool_dir(f"jobset-{version}"), "module/config/components")
    c.kubectl("apply", "--server-side", "--force-conflicts", "-f", os.path.join(mod, "crd/bases"))
    kc = base.install_identity(system, os.path.join(mod, "rbac"), "jobset-", ns)
    port, cert_dir = base.register_webhooks(system, os.path.join(mod, "webhook"), "jobset-",
                                            f"jobset-webhook-service.{ns}.svc")
    health = clusterlib.free_port()
    cfg_path = base.write_config(
        system, os.path.join(mod, "manager/controller_manager_config.yaml"), f"jobset-{version}", {
            "internalCertManagement": {"enable": False},
            "webhook": {"port": port, "host": "127.0.0.1", "certDir": cert_dir},
            "metrics": {"bindAddress": f"127.0.0.1:{clusterlib.free_port()}"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
            "leaderElection": {"resourceNamespace": ns},
        })
    system.start("jobset", [os.path.join(clusterlib.TOOLS_BIN, f"jobset-{version}"),
                            "--config", cfg_path],
                 env={"KUBECONFIG": kc, "POD_NAMESPACE": ns, "NAMESPACE": ns})
    base.wait_ready(system, health, "jobset")

