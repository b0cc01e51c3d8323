"""TrainingJobClient over the fake API (tests/fake_kube.py): what it submits, how it waits,
how it merges and follows every rank's log, what `status` says per rank."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from kubernetes import client as k8s

from fake_kube import FakeCoreV1Api, FakeCustomObjectsApi, api_error, pod
from lockstep import (JobFailedError, SpecError, TrainingJobClient, TrainingJobError,
                      WaitTimeoutError)
from lockstep import cli


@pytest.fixture
def fakes() -> tuple[TrainingJobClient, FakeCustomObjectsApi, FakeCoreV1Api]:
    custom, core = FakeCustomObjectsApi(), FakeCoreV1Api()
    client = TrainingJobClient(namespace="ns", api_client=k8s.ApiClient(), custom_api=custom,
                               core_api=core)
    return client, custom, core


def train_fn(steps: int, tag: str = "x") -> None:
    import os
    print(f"TRAINED steps={steps} tag={tag} rank={os.environ.get('RANK', '?')}")


def test_train_ships_a_function_as_source_and_json_arguments(fakes: Any) -> None:
    client, custom, _ = fakes
    name = client.train(train_fn, func_args={"steps": 3, "tag": "a b"}, workers=2,
                        procs_per_worker=2, image="img:1", env={"A": "1"},
                        node_selector={"pool": "p"})
    assert name.startswith("train-fn-")
    body = custom.created[0]
    assert body["metadata"] == {"generateName": "train-fn-", "namespace": "ns"}
    spec = body["spec"]
    assert (spec["framework"], spec["replicas"], spec["procsPerPod"]) == ("PyTorch", 2, 2)
    pod_spec = spec["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"pool": "p"}
    trainer = pod_spec["containers"][0]
    assert trainer["image"] == "img:1" and trainer["env"] == [{"name": "A", "value": "1"}]
    command = trainer["command"]
    assert command[:2] == ["python", "-c"]
    assert "def train_fn(steps: int" in command[3] and "import pickle" not in command[3]
    # What every process of the pod runs, run here.
    out = subprocess.run([sys.executable, "-c", command[2], command[3]], capture_output=True,
                         text=True, env={"RANK": "3"}, check=True)
    assert out.stdout.strip() == "TRAINED steps=3 tag=a b rank=3"


def test_train_script_and_command_and_gpus(fakes: Any) -> None:
    client, custom, _ = fakes
    client.train(script="/examples/frameworks/pytorch/train.py", args=["--epochs", 1],
                 gpus_per_worker=8, name="gpu-job")
    spec = custom.created[0]["spec"]
    trainer = spec["template"]["spec"]["containers"][0]
    assert custom.created[0]["metadata"]["name"] == "gpu-job"
    assert trainer["command"] == ["python", "/examples/frameworks/pytorch/train.py",
                                  "--epochs", "1"]
    assert trainer["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    assert trainer["image"].startswith("pytorch/pytorch:")
    assert "procsPerPod" not in spec  # the operator's default: the GPUs
    client.train(command=["bash", "-c", "echo hi"], framework="Generic", image="busybox")
    assert custom.created[1]["spec"]["framework"] == "Generic"
    with pytest.raises(SpecError, match="exactly one"):
        client.train(train_fn, script="x.py")
    with pytest.raises(SpecError, match="no default image"):
        client.train(command=["x"], framework="JAX")


def test_functions_that_cannot_travel_by_source_are_refused(fakes: Any) -> None:
    client, _, _ = fakes
    outer = 3

    def closure() -> int:
        return outer

    with pytest.raises(SpecError, match="enclosing function"):
        client.train(closure)
    with pytest.raises(SpecError, match="lambda"):
        client.train(lambda: None)
    with pytest.raises(SpecError, match="JSON"):
        client.train(train_fn, func_args={"steps": object()})
    with pytest.raises(SpecError, match="not a Python function"):
        client.train(print)  # type: ignore[arg-type]


def test_get_list_progress_delete(fakes: Any) -> None:
    client, custom, _ = fakes
    custom.put("a", {"state": "Running", "progress": {"step": 5, "totalSteps": 10,
                                                      "percent": 50}})
    custom.put("b")
    assert client.get("a")["metadata"]["name"] == "a"
    assert sorted(j["metadata"]["name"] for j in client.list()) == ["a", "b"]
    assert client.progress("a") == {"step": 5, "totalSteps": 10, "percent": 50}
    assert client.progress("b") is None
    client.delete("a")
    assert custom.deleted == ["a"] and custom.delete_options.propagation_policy == "Background"


def test_wait_returns_on_the_state_from_the_watch(fakes: Any) -> None:
    client, custom, _ = fakes
    custom.put("j", {"state": "Pending"})
    custom.watch_updates = [("MODIFIED", "j", {"state": "Running"}),
                            ("MODIFIED", "j", {"state": "Succeeded"})]
    job = client.wait("j", timeout=30)
    assert job["status"]["state"] == "Succeeded"
    assert custom.watch_calls[0]["field_selector"] == "metadata.name=j"
    assert custom.watch_calls[0]["resource_version"]  # from the list, not from scratch


def test_wait_raises_with_the_jobs_reason_when_it_fails(fakes: Any) -> None:
    client, custom, _ = fakes
    custom.put("j", {"state": "Running"})
    custom.watch_updates = [("MODIFIED", "j", {"state": "Failed", "reason": "PodFailed",
                                               "message": "rank 1 exited 3: boom"})]
    with pytest.raises(JobFailedError) as e:
        client.wait("j")
    assert (e.value.reason, e.value.message) == ("PodFailed", "rank 1 exited 3: boom")
    assert "PodFailed: rank 1 exited 3: boom" in str(e.value)
    assert client.wait("j", until="Failed")["status"]["reason"] == "PodFailed"


def test_wait_for_running_accepts_a_job_that_already_finished(fakes: Any) -> None:
    client, custom, _ = fakes
    custom.put("j", {"state": "Succeeded"})
    assert client.wait("j", until="Running")["status"]["state"] == "Succeeded"
    with pytest.raises(TrainingJobError, match="succeeded while Suspended"):
        client.wait("j", until="Suspended")


def test_wait_lists_again_after_410_and_times_out(fakes: Any) -> None:
    client, custom, _ = fakes
    custom.put("j", {"state": "Pending"})
    custom.watch_error = api_error(410, "Gone")
    with pytest.raises(WaitTimeoutError, match="not Succeeded within 0.3 s \\(state Pending\\)"):
        client.wait("j", timeout=0.3)
    assert len(custom.watch_calls) >= 2  # watched again after listing again
    custom.watch_updates = [("DELETED", "j", {})]
    with pytest.raises(TrainingJobError, match="deleted"):
        client.wait("j", timeout=5)
    with pytest.raises(TrainingJobError, match="no TrainingJob missing"):
        client.wait("missing")
    with pytest.raises(ValueError, match="until='Done'"):
        client.wait("j", until="Done")


def two_ranks(custom: FakeCustomObjectsApi, core: FakeCoreV1Api, attempt: int = 0) -> None:
    custom.put("j", {"state": "Running", "attempt": attempt})
    core.set_pods([pod("j", "worker", 1, 1, attempt), pod("j", "worker", 0, 0, attempt)])
    core.logs = {f"j-worker-0-a{attempt}": "a0\nb0\n", f"j-worker-1-a{attempt}": "a1\nb1\n"}


def test_logs_now_rank_by_rank_with_prefixes(fakes: Any) -> None:
    client, custom, core = fakes
    two_ranks(custom, core)
    lines = [str(line) for line in client.logs("j", follow=False)]
    assert lines == ["[rank 0] a0", "[rank 0] b0", "[rank 1] a1", "[rank 1] b1"]
    assert core.log_calls[0]["container"] == "trainer"
    assert [str(x) for x in client.logs("j", follow=False, ranks=[1])] == [
        "[rank 1] a1", "[rank 1] b1"]


def test_logs_now_skips_a_pod_deleted_after_the_list(fakes: Any) -> None:
    client, custom, core = fakes
    two_ranks(custom, core)
    core.deleted_before_log = {"j-worker-1"}
    assert [str(x) for x in client.logs("j", follow=False)] == ["[rank 0] a0", "[rank 0] b0"]
    core.deleted_before_log = {"j-worker-0"}
    assert [str(x) for x in client.logs("j", follow=False)] == []


def test_logs_skip_older_attempts_and_pods_not_started(fakes: Any) -> None:
    client, custom, core = fakes
    custom.put("j", {"state": "Running", "attempt": 1})
    # Pod names repeat across attempts; an old one left (Terminating) has another index here.
    core.set_pods([pod("j", "worker", 2, 2, 0, state="terminated", exit_code=137),
                   pod("j", "worker", 1, 1, 1, state="waiting"),
                   pod("j", "worker", 0, 0, 1)])
    core.logs = {"j-worker-2-a0": "old\n", "j-worker-0-a1": "new\n"}
    assert [str(x) for x in client.logs("j", follow=False)] == ["[rank 0] new"]


def test_follow_merges_every_rank_and_follows_a_restart_to_the_new_attempt(fakes: Any) -> None:
    client, custom, core = fakes
    two_ranks(custom, core, attempt=0)
    core.logs["j-worker-0-a1"] = "c0\n"
    core.logs["j-worker-1-a1"] = "c1 without newline"

    def world(gets: int) -> None:
        if gets == 2:  # the gang restarted: attempt 1's pods replace attempt 0's
            custom.put("j", {"state": "Running", "attempt": 1})
            core.set_pods([pod("j", "worker", 0, 0, 1), pod("j", "worker", 1, 1, 1)])
        if gets == 4:
            custom.put("j", {"state": "Succeeded", "attempt": 1})

    custom.on_get = world
    lines = [(x.rank, x.attempt, x.text) for x in client.logs("j", poll_seconds=0.05)]
    per_rank = {r: [(a, t) for rr, a, t in lines if rr == r] for r in (0, 1)}
    assert per_rank[0] == [(0, "a0"), (0, "b0"), (1, "c0")]
    assert per_rank[1] == [(0, "a1"), (0, "b1"), (1, "c1 without newline")]
    assert all(call.get("follow") for call in core.log_calls)


def test_follow_of_a_finished_job_reads_each_log_once_and_ends(fakes: Any) -> None:
    client, custom, core = fakes
    custom.put("j", {"state": "Failed", "attempt": 0})
    core.set_pods([pod("j", "worker", 0, 0, 0, state="terminated"),
                   pod("j", "spare", 0, None, 0, spare=True)])
    core.logs = {"j-worker-0-a0": "done\n", "j-spare-0-a0": "standing by\n"}
    assert sorted(str(x) for x in client.logs("j")) == ["[j-spare-0] standing by",
                                                        "[rank 0] done"]


def test_a_promoted_spare_logs_as_the_rank_it_serves(fakes: Any) -> None:
    client, custom, core = fakes
    custom.put("j", {"state": "Running", "attempt": 0,
                     "spares": {"serving": [{"nodeRank": 1, "pod": "j-spare-0"}]}})
    core.set_pods([pod("j", "spare", 0, None, 0, spare=True)])
    core.logs = {"j-spare-0-a0": "serving\n"}
    assert [str(x) for x in client.logs("j", follow=False)] == ["[rank 1] serving"]


def test_status_per_rank_says_why_it_waits_or_failed(fakes: Any) -> None:
    client, custom, core = fakes
    custom.put("j", {"state": "Failed", "attempt": 2, "reason": "PodFailed",
                     "restarts": {"total": 2},
                     "progress": {"step": 40, "totalSteps": 100, "percent": 40},
                     "conditions": [{"type": "Scheduled", "status": "False",
                                     "message": "needs 16 nvidia.com/gpu; largest free: 8"}]})
    core.set_pods([
        pod("j", "worker", 0, 0, 2),
        pod("j", "worker", 1, 1, 2, state="terminated", exit_code=3,
            termination={"reason": "ChildFailed", "message": "rank 2 exited 3",
                         "stderrTail": ["Traceback", "ValueError: boom"],
                         "progress": {"step": 41, "totalSteps": 100}}),
        pod("j", "worker", 2, 2, 2, state="waiting", node=None),
        pod("j", "worker", 3, 3, 2, state="waiting", waiting_reason="ErrImagePull"),
        pod("j", "worker", 4, 4, 1, state="terminated"),  # an older attempt: not shown
    ])
    rows = client.status("j")
    assert [r.rank for r in rows] == [0, 1, 2, 3]
    assert rows[0].progress == "step 40/100 (40%)" and rows[0].state == "Running"
    assert rows[0].restarts == 2 and rows[0].attempt == 2
    assert rows[1].state == "Failed (exit 3)" and rows[1].progress == "step 41/100"
    assert rows[1].why == "ChildFailed; rank 2 exited 3; last stderr: ValueError: boom"
    assert rows[2].node == "-" and rows[2].why == "needs 16 nvidia.com/gpu; largest free: 8"
    assert rows[3].why == "ErrImagePull"
    text = cli.format_status(client.get("j"), rows)
    assert text.splitlines()[0] == "ns/j: Failed (PodFailed), attempt 2, workers ready -"
    assert "RANK" in text and "ValueError: boom" in text


def test_cli_submit_logs_status_through_the_client(fakes: Any, monkeypatch: Any,
                                                    capsys: Any) -> None:
    client, custom, core = fakes
    monkeypatch.setattr(cli, "_client", lambda args: client)
    assert cli.main(["submit", "--workers", "2", "--procs-per-worker", "2", "--image", "img",
                     "-e", "A=1", "--node-selector", "k=v", "--", "python", "t.py",
                     "--epochs", "1"]) == 0
    body = custom.created[0]
    trainer = body["spec"]["template"]["spec"]["containers"][0]
    assert trainer["command"] == ["python", "t.py", "--epochs", "1"]
    assert body["metadata"]["generateName"] == "python-"
    assert capsys.readouterr().out.startswith("trainingjob.lockstep.dev/python-")
    two_ranks(custom, core)
    assert cli.main(["logs", "j", "--rank", "1"]) == 0
    assert capsys.readouterr().out == "[rank 1] a1\n[rank 1] b1\n"
    assert cli.main(["status", "j"]) == 0
    assert "ns/j: Running" in capsys.readouterr().out
    custom.put("f", {"state": "Failed", "reason": "Hang", "message": "no progress"})
    assert cli.main(["wait", "f"]) == 1
    assert "Failed: Hang: no progress" in capsys.readouterr().err
