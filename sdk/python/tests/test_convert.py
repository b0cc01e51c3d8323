"""convert(): Kubeflow job manifests -> TrainingJobs, field by field (docs/migrate.md), on
hand-written manifests for what the training-operator's own examples do not cover (JAXJob,
which v1.8.1 does not have; ExitCode; scheduling policies; elastic Horovod). The v1.8.1 examples
themselves: tests/sdk/test_convert_examples.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from lockstep import ConversionError, convert
from lockstep import cli


def container(name: str = "pytorch", command: Any = ("python", "train.py"), **extra: Any) -> dict:
    c: dict[str, Any] = {"name": name, "image": "img"}
    if command is not None:
        c["command"] = list(command)
    c.update(extra)
    return c


def replica(replicas: int = 1, restart: str | None = None, containers: Any = None) -> dict:
    r: dict[str, Any] = {"replicas": replicas,
                         "template": {"spec": {"containers": containers or [container()]}}}
    if restart:
        r["restartPolicy"] = restart
    return r


def job(kind: str, spec: dict, name: str = "j") -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "team"}, "spec": spec}


def fields(result: Any) -> list[str]:
    return [w.field for w in result.warnings]


def test_pytorch_master_and_workers_run_policy_and_backoff() -> None:
    result = convert(job("PyTorchJob", {
        "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60,
                      "activeDeadlineSeconds": 3600, "backoffLimit": 5, "suspend": True,
                      "schedulingPolicy": {"priorityClass": "high", "minAvailable": 4}},
        "pytorchReplicaSpecs": {"Worker": replica(3, "OnFailure"),
                                "Master": replica(1, "OnFailure")}}))
    spec = result.job["spec"]
    assert result.job["metadata"] == {"name": "j", "namespace": "team"}
    assert (spec["framework"], spec["replicas"]) == ("PyTorch", 3)
    assert [(r["name"], r["replicas"]) for r in spec["roles"]] == [("master", 1)]
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60,
                                 "activeDeadlineSeconds": 3600, "suspend": True}
    assert spec["failurePolicy"] == {"maxRestarts": 5}
    assert spec["priorityClassName"] == "high"
    assert result.warnings == []  # minAvailable 4 == every pod: nothing lost


def test_torchrun_is_removed_and_its_nproc_becomes_procs_per_pod() -> None:
    cmd = ["torchrun", "--nnodes=1:4", "--nproc_per_node", "4", "--rdzv_backend", "c10d",
           "-m", "my.module", "--lr", "0.1"]
    result = convert(job("PyTorchJob", {"pytorchReplicaSpecs": {
        "Worker": replica(2, containers=[container("sidecar"), container(command=cmd)])}}))
    spec = result.job["spec"]
    trainer = spec["template"]["spec"]["containers"][0]
    assert trainer["name"] == "pytorch"  # the trainer goes first: the launcher wraps it
    assert trainer["command"] == ["python", "-m", "my.module", "--lr", "0.1"]
    assert spec["procsPerPod"] == 4
    assert any("--nproc_per_node 4" in w.message for w in result.warnings)
    assert spec["runPolicy"] == {"cleanPodPolicy": "None"}  # Kubeflow's default, said
    assert "spec.runPolicy.backoffLimit" in fields(result)


@pytest.mark.parametrize("value,procs,warned", [("4", 4, False), ("auto", None, False),
                                                ("gpu", None, False), ("cpu", None, True)])
def test_nproc_per_node(value: str, procs: int | None, warned: bool) -> None:
    result = convert(job("PyTorchJob", {"nprocPerNode": value,
                                        "pytorchReplicaSpecs": {"Worker": replica(2)}}))
    assert result.job["spec"].get("procsPerPod") == procs
    assert ("spec.nprocPerNode" in fields(result)) == warned


def test_pytorch_elastic_policy() -> None:
    result = convert(job("PyTorchJob", {
        "runPolicy": {"backoffLimit": 2},
        "elasticPolicy": {"minReplicas": 2, "maxReplicas": 6, "maxRestarts": 10,
                          "rdzvBackend": "c10d", "rdzvPort": 29400,
                          "metrics": [{"type": "Resource"}]},
        "pytorchReplicaSpecs": {"Worker": replica(8)}}))
    spec = result.job["spec"]
    assert spec["elastic"] == {"minReplicas": 2, "maxReplicas": 6}
    assert spec["replicas"] == 6  # 8 is outside the bounds: clamped, said
    assert spec["failurePolicy"] == {"maxRestarts": 10}
    assert {"spec.pytorchReplicaSpecs.Worker.replicas", "spec.elasticPolicy.rdzvBackend",
            "spec.elasticPolicy.rdzvPort", "spec.elasticPolicy.metrics",
            "spec.runPolicy.backoffLimit"} <= set(fields(result))


def test_tfjob_roles_success_policy_and_restart_policies() -> None:
    result = convert(job("TFJob", {
        "successPolicy": "AllWorkers", "enableDynamicWorker": True,
        "tfReplicaSpecs": {"PS": replica(2, "Never", [container("tensorflow")]),
                           "Worker": replica(4, "ExitCode", [container("tensorflow")]),
                           "Master": replica(1, "Never", [container("tensorflow")]),
                           "Evaluator": replica(1, "Never", [container("tensorflow")])}}))
    spec = result.job["spec"]
    assert spec["framework"] == "TensorFlow" and spec["replicas"] == 4
    assert [r["name"] for r in spec["roles"]] == ["chief", "ps", "evaluator"]
    assert spec["successPolicy"] == {"operator": "All", "targetRoles": ["worker"]}
    rule = spec["failurePolicy"]["rules"][0]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["operator"] == "In"
    codes = rule["onExitCodes"]["values"]
    assert 1 in codes and 127 in codes and 128 not in codes and 75 not in codes
    assert {"spec.tfReplicaSpecs.Master", "spec.enableDynamicWorker",
            "spec.*ReplicaSpecs.*.restartPolicy", "restartPolicy"} <= set(fields(result))


def test_tfjob_without_chief_warns_about_worker_zero_and_never_means_no_restart() -> None:
    result = convert(job("TFJob", {"runPolicy": {"backoffLimit": 3},
                                   "tfReplicaSpecs": {"Worker": replica(2, containers=[
                                       container("tensorflow")])}}))
    assert result.job["spec"]["failurePolicy"] == {"maxRestarts": 0}  # TF's default: Never
    assert {"spec.successPolicy", "spec.runPolicy.backoffLimit"} <= set(fields(result))


def test_mpijob_horovod_elastic_the_launcher_program_runs_on_the_workers() -> None:
    launcher = container("mpi", ["horovodrun"], args=[
        "-np", "4", "--min-np", "2", "--max-np", "8", "--host-discovery-script",
        "/etc/mpi/discover_hosts.sh", "python", "/train.py", "--epochs", "3"],
        env=[{"name": "FROM_LAUNCHER", "value": "1"}, {"name": "SHARED", "value": "launcher"}])
    worker = container("mpi", None, env=[{"name": "SHARED", "value": "worker"}])
    result = convert(job("MPIJob", {
        "slotsPerWorker": 2, "cleanPodPolicy": "Running",
        "mpiReplicaSpecs": {"Launcher": replica(1, containers=[launcher]),
                            "Worker": replica(2, containers=[worker])}}))
    spec = result.job["spec"]
    assert (spec["framework"], spec["replicas"], spec["procsPerPod"]) == ("Horovod", 2, 2)
    trainer = spec["template"]["spec"]["containers"][0]
    assert trainer["command"] == ["python", "/train.py", "--epochs", "3"]
    assert {e["name"]: e["value"] for e in trainer["env"]} == {"SHARED": "worker",
                                                               "FROM_LAUNCHER": "1"}
    assert spec["elastic"] == {"minReplicas": 1, "maxReplicas": 4}
    assert spec["runPolicy"]["cleanPodPolicy"] == "Running"
    assert spec["failurePolicy"] == {"maxRestarts": 0}
    assert "roles" not in spec
    assert any("--host-discovery-script" in w.message for w in result.warnings)


def test_mpijob_of_a_plain_mpi_program_is_generic_and_np_mismatch_is_said() -> None:
    launcher = container("mpi", ["mpirun", "-np", "3", "-x", "A=1", "/bin/app"])
    result = convert(job("MPIJob", {"mpiReplicaSpecs": {
        "Launcher": replica(1, containers=[launcher]),
        "Worker": replica(2, containers=[container("mpi", ["/usr/sbin/sshd", "-De"])])}}))
    spec = result.job["spec"]
    assert spec["framework"] == "Generic"
    trainer = spec["template"]["spec"]["containers"][0]
    assert trainer["command"] == ["/bin/app"] and trainer["env"] == [{"name": "A", "value": "1"}]
    messages = " ".join(w.message for w in result.warnings)
    assert "-np 3 differs" in messages and "sshd" in messages


def test_jaxjob_from_training_operator_v1_9() -> None:
    # JAXJob is not in v1.8.1 (added in v1.9): its shape from the v1.9 API.
    result = convert(job("JAXJob", {"runPolicy": {"cleanPodPolicy": "All"},
                                    "jaxReplicaSpecs": {"Worker": replica(
                                        2, "OnFailure", [container("jax")])}}))
    spec = result.job["spec"]
    assert (spec["framework"], spec["replicas"]) == ("JAX", 2)
    assert spec["runPolicy"] == {"cleanPodPolicy": "All"}
    assert "spec.jaxReplicaSpecs" in fields(result)


def test_scheduling_policy_without_equivalent_is_warned_field_by_field() -> None:
    result = convert(job("PyTorchJob", {
        "runPolicy": {"backoffLimit": 1, "schedulingPolicy": {
            "minAvailable": 1, "queue": "q", "minResources": {"cpu": "1"},
            "scheduleTimeoutSeconds": 30}, "somethingNew": 1},
        "mystery": True,
        "pytorchReplicaSpecs": {"Worker": replica(2, containers=[container(
            schedulerName=None)])}}))
    assert {"spec.runPolicy.schedulingPolicy.minAvailable",
            "spec.runPolicy.schedulingPolicy.queue",
            "spec.runPolicy.schedulingPolicy.minResources",
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
            "spec.runPolicy.somethingNew", "spec.mystery"} <= set(fields(result))


def test_template_fields_lockstep_owns_are_dropped_with_a_warning() -> None:
    r = replica(1)
    r["template"]["spec"].update({"restartPolicy": "OnFailure", "schedulerName": "volcano"})
    r["template"]["metadata"] = {"annotations": {"scheduling.k8s.io/group-name": "g"}}
    result = convert(job("PyTorchJob", {"pytorchReplicaSpecs": {"Worker": r}},
                         name="A_Very_Long_Name_That_Is_Not_A_DNS_Label_At_All_1"))
    pod = result.job["spec"]["template"]["spec"]
    assert "restartPolicy" not in pod and "schedulerName" not in pod
    assert result.job["metadata"]["name"] == "a-very-long-name-that-is-not-a-dns-label"
    assert {"metadata.name", "spec.pytorchReplicaSpecs.Worker.template.spec.restartPolicy",
            "spec.pytorchReplicaSpecs.Worker.template.spec.schedulerName"} <= set(fields(result))


def test_a_container_without_command_gets_a_placeholder_that_says_so() -> None:
    result = convert(job("TFJob", {"tfReplicaSpecs": {"Worker": replica(
        1, containers=[container("tensorflow", None)])}}))
    trainer = result.job["spec"]["template"]["spec"]["containers"][0]
    assert trainer["command"][0] == "/bin/sh" and "exit 2" in trainer["command"][2]
    only_args = convert(job("TFJob", {"tfReplicaSpecs": {"Worker": replica(
        1, containers=[container("tensorflow", None, args=["python", "t.py"])])}}))
    assert only_args.job["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "python", "t.py"]
    # Options alone are the ENTRYPOINT's: kept after the placeholder (sh -c's $1...).
    options = convert(job("PyTorchJob", {"pytorchReplicaSpecs": {"Worker": replica(
        1, containers=[container(command=None, args=["--backend", "gloo"])])}}))
    trainer = options.job["spec"]["template"]["spec"]["containers"][0]
    assert trainer["command"][0] == "/bin/sh" and trainer["args"] == ["--backend", "gloo"]


@pytest.mark.parametrize("manifest,error", [
    ({"apiVersion": "batch/v1", "kind": "Job"}, "kind 'Job'"),
    ({"apiVersion": "v1", "kind": "PyTorchJob"}, "not kubeflow.org"),
    (job("PyTorchJob", {}), "pytorchReplicaSpecs is missing"),
    (job("PyTorchJob", {"pytorchReplicaSpecs": {"Launcher": replica()}}), "no replica type"),
    (job("MPIJob", {"mpiReplicaSpecs": {"Worker": replica()}}), "Launcher and a Worker"),
    (job("MPIJob", {"mpiReplicaSpecs": {"Launcher": replica(), "Worker": replica()}}),
     "not mpirun"),
])
def test_what_cannot_be_converted_is_an_error(manifest: dict, error: str) -> None:
    with pytest.raises(ConversionError, match=error):
        convert(manifest)


def test_cli_convert_prints_yaml_and_warnings_on_stderr(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all([
        job("PyTorchJob", {"pytorchReplicaSpecs": {"Worker": replica(2)}}, name="a"),
        job("TFJob", {"tfReplicaSpecs": {"Worker": replica(1, containers=[
            container("tensorflow")])}}, name="b")]))
    assert cli.main(["convert", "-f", str(path)]) == 0
    out = capsys.readouterr()
    docs = list(yaml.safe_load_all(out.out))
    assert [d["metadata"]["name"] for d in docs] == ["a", "b"]
    assert all(d["kind"] == "TrainingJob" for d in docs)
    assert "warning: a: spec.runPolicy.backoffLimit" in out.err
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod"}))
    with pytest.raises(SystemExit, match="kind 'Pod'"):
        cli.main(["convert", "-f", str(path)])
