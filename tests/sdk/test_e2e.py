"""The SDK end to end: apiserver -> operator -> pods the test node agent runs -> launcher ->
PyTorch/TensorFlow, through TrainingJobClient only (docs/sdk.md).

- A DDP training function shipped by source (no pickle) trains on 2 pods x 2 processes, and
  `logs()` returns every rank's lines, prefixed by rank; the example script by path, as the
  README's three lines run it.
- The converted PyTorchJob and TFJob examples of training-operator v1.8.1 run to Succeeded. Their
  images cannot run here (the agent pulls nothing; docs/e2e.md "Images"), so this test, not the
  converter, substitutes the trainer of every pod: image lockstep/examples:dev (the checkout),
  the local example script of the framework as command, a small CPU request in place of the
  example's, emptyDir in place of PersistentVolumeClaims, and the agent's nodes as nodeSelector.
  Everything else is the converter's: roles, replicas, procsPerPod, elastic bounds, success,
  failure and run policies.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

import harness
from lockstep import TrainingJobClient, convert


@pytest.fixture(scope="module")
def cluster() -> Any:
    why = harness.e2e_missing()
    if why:
        if os.environ.get("LOCKSTEP_SDK_REQUIRE_E2E") == "1":
            pytest.fail(f"the sdk e2e tests cannot run: {why}")
        pytest.skip(f"sdk e2e skipped: {why}")
    c = harness.AgentCluster(nodes=4)
    try:
        c.start()
        yield c
    finally:
        problems = c.stop()
        assert not problems, problems


@pytest.fixture
def client(cluster: harness.AgentCluster) -> TrainingJobClient:
    return TrainingJobClient(namespace=cluster.namespace)


def ddp_train(epochs: int, steps: int) -> None:
    """DDP on CPU with gloo: every rank ends with the same weights, and says so."""
    import hashlib

    import torch
    import torch.distributed as dist
    import torch.nn as nn

    dist.init_process_group("gloo")  # the launcher gave every process torchrun's env
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(epochs):
        for step in range(steps):
            g = torch.Generator().manual_seed(1000 * rank + 100 * epoch + step)
            x = torch.randn(16, 8, generator=g)
            loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"EPOCH rank={rank} epoch={epoch} loss={loss.item():.4f}", flush=True)
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                     for p in model.parameters())).hexdigest()[:16]
    print(f"WEIGHTS rank={rank} world={world} sha={digest}", flush=True)
    dist.destroy_process_group()


def weights(lines: list[Any]) -> dict[int, tuple[int | None, str]]:
    """rank in the text -> (rank prefix, sha) of every WEIGHTS line."""
    out = {}
    for line in lines:
        if line.text.startswith("WEIGHTS "):
            fields = dict(f.split("=", 1) for f in line.text.split()[1:])
            out[int(fields["rank"])] = (line.rank, fields["sha"])
    return out


def test_ddp_function_trains_and_logs_come_from_every_rank(
        cluster: harness.AgentCluster, client: TrainingJobClient) -> None:
    started = time.monotonic()
    job = client.train(ddp_train, func_args={"epochs": 2, "steps": 5}, workers=2,
                       procs_per_worker=2, cpu="250m", memory="512Mi",
                       node_selector=cluster.node_selector)
    lines = list(client.logs(job))  # follows until the job has finished and the logs ended
    final = client.wait(job, timeout=30)
    seen = weights(lines)
    assert sorted(seen) == [0, 1, 2, 3], "\n".join(map(str, lines)) + cluster.diagnostics(job)
    # Node rank 0 runs global ranks 0-1, node rank 1 ranks 2-3; one model everywhere.
    assert {r: prefix for r, (prefix, _) in seen.items()} == {0: 0, 1: 0, 2: 1, 3: 1}
    assert len({sha for _, sha in seen.values()}) == 1, seen
    assert any(str(line).startswith("[rank 1] WEIGHTS rank=3 world=4") for line in lines)
    assert final["status"]["state"] == "Succeeded"
    rows = client.status(job)
    assert [(r.rank, r.state) for r in rows] == [(0, "Succeeded"), (1, "Succeeded")]
    print(f"DDP function job {job}: submitted to Succeeded with logs in "
          f"{time.monotonic() - started:.1f} s")


def test_the_example_script_by_path_as_the_readme_runs_it(
        cluster: harness.AgentCluster, client: TrainingJobClient) -> None:
    job = client.train(script="/examples/frameworks/pytorch/train.py",
                       args=["--epochs", "1", "--steps-per-epoch", "3"], workers=2,
                       procs_per_worker=2, image="lockstep/examples:dev",
                       node_selector=cluster.node_selector)
    lines = list(client.logs(job))
    client.wait(job, timeout=30)
    shas = {line.text.split("sha=")[1].split()[0] for line in lines
            if line.text.startswith("WEIGHTS ")}
    assert len([x for x in lines if x.text.startswith("WEIGHTS ")]) == 4, cluster.diagnostics(job)
    assert len(shas) == 1
    assert {line.rank for line in lines} == {0, 1}


# The local example that stands in for each framework's training image (docs above).
LOCAL_COMMAND = {
    "PyTorch": ["python", "/examples/frameworks/pytorch/train.py", "--epochs", "1",
                "--steps-per-epoch", "3", "--batch-size", "8"],
    "TensorFlow": ["python", "/examples/frameworks/tensorflow/train.py", "--strategy",
                   "multi-worker-mirrored", "--steps", "3"],
}
# TFJob dist-mnist is a TensorFlow 1 parameter-server job without a chief (worker 0 initialises,
# the PS tasks serve until the job ends): the example of that pattern stands in for its image.
STAND_IN = {"dist-mnist-for-e2e-test": [
    "python", "/examples/frameworks/tensorflow/ps_without_chief.py", "--steps", "40"]}


def substitute_local_example(job: dict[str, Any], node_selector: dict[str, str]) -> None:
    framework = job["spec"]["framework"]
    command = STAND_IN.get(job["metadata"]["name"], LOCAL_COMMAND[framework])
    templates = [job["spec"]["template"]] + [r["template"] for r in job["spec"].get("roles", [])]
    for template in templates:
        pod = template["spec"]
        trainer = pod["containers"][0]
        trainer["image"] = "lockstep/examples:dev"
        trainer["command"] = list(command)
        trainer.pop("args", None)
        gpus = ((trainer.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
        trainer["resources"] = {"requests": {"cpu": "100m", "memory": "256Mi"}}
        if gpus:  # the agent's nodes pretend 8 GPUs; procsPerPod follows them
            trainer["resources"]["limits"] = {"nvidia.com/gpu": gpus}
        pod["containers"] = [trainer]
        for volume in pod.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                del volume["persistentVolumeClaim"]
                volume["emptyDir"] = {}
        pod["nodeSelector"] = dict(node_selector)
        pod["terminationGracePeriodSeconds"] = 5


def runnable_examples() -> list[tuple[str, dict[str, Any]]]:
    import test_convert_examples as examples
    return [(p, d) for p, d in examples.EXAMPLES if d["kind"] in ("PyTorchJob", "TFJob")]


def test_converted_pytorch_and_tf_examples_run_to_succeeded(
        cluster: harness.AgentCluster, client: TrainingJobClient) -> None:
    examples = runnable_examples()
    assert len(examples) == 13, [p for p, _ in examples]
    # Three at a time: a dozen gangs of torch and TF processes at once would only starve the
    # 2-core machine's control plane.
    pending = list(examples)
    failures = []
    while pending:
        batch, pending = pending[:3], pending[3:]
        names = {}
        for path, doc in batch:
            job = convert(doc).job
            job["metadata"].pop("namespace", None)
            substitute_local_example(job, cluster.node_selector)
            names[client.create(job)] = path
        for name, path in names.items():
            try:
                final = client.wait(name, timeout=240)
                lines = list(client.logs(name, follow=False))
                evidence = [x for x in lines if x.text.startswith("WEIGHTS ")]
                if not evidence:
                    failures.append(f"{path}: Succeeded without a WEIGHTS line")
                assert final["status"]["state"] == "Succeeded"
            except Exception as e:  # noqa: BLE001 (report every example, then fail)
                failures.append(f"{path} ({name}): {e}\n{cluster.diagnostics(name)}")
            client.delete(name)
    assert not failures, "\n\n".join(failures)
