"""JobSet's controller as a host process (shared by JS+KU and TR): CRDs, RBAC (kustomize's
"jobset-" prefix) and webhooks from the JobSet module the peer pins, its shipped Configuration
with the webhook on loopback and the certificates made here instead of its internal cert
management, and a token of its own ServiceAccount."""
import os

import yaml

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
    rbac = base.kustomize_resources(os.path.join(mod, "rbac"))
    c.apply(base.to_yaml(base.prefix_and_namespace(rbac, "jobset-", ns)))
    port = clusterlib.free_port()
    cert_dir, ca = clusterlib.webhook_certs(system.out_dir, f"jobset-{version}",
                                            [f"jobset-webhook-service.{ns}.svc"])
    hooks = base.webhooks_by_url(base.kustomize_webhooks(os.path.join(mod, "webhook")),
                                 "jobset-", port, ca)
    c.apply(base.to_yaml(hooks))
    system.webhook_configs += [(h["kind"], h["metadata"]["name"]) for h in hooks]
    with open(os.path.join(mod, "manager/controller_manager_config.yaml")) as f:
        cfg = yaml.safe_load(f)
    health = clusterlib.free_port()
    cfg.update({
        "internalCertManagement": {"enable": False},
        "webhook": {"port": port, "host": "127.0.0.1", "certDir": cert_dir},
        "metrics": {"bindAddress": f"127.0.0.1:{clusterlib.free_port()}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
    })
    cfg.setdefault("leaderElection", {})["resourceNamespace"] = ns
    cfg_path = os.path.join(system.out_dir, f"jobset-{version}.yaml")
    with open(cfg_path, "w") as f:
        yaml.safe_dump(cfg, f)
    kc = c.service_account_kubeconfig(ns, "jobset-controller-manager",
                                      os.path.join(system.out_dir, f"jobset-{version}.kubeconfig"))
    system.start("jobset", [os.path.join(clusterlib.TOOLS_BIN, f"jobset-{version}"),
                            "--config", cfg_path],
                 env={"KUBECONFIG": kc, "POD_NAMESPACE": ns, "NAMESPACE": ns})
    base.wait_ready(system, health, "jobset")


def delete_webhooks(system):
    for kind, name in system.webhook_configs:
        system.cluster.kubectl("delete", kind.lower(), name, "--ignore-not-found")
    system.webhook_configs = []
