"""Every PyTorchJob, TFJob, MPIJob and JAXJob example manifest of the training-operator v1.8.1
Go module converts without error, and the real API server accepts each converted TrainingJob
(`kubectl apply --dry-run=server`: the CRD's schema and CEL rules, defaults applied).

The module is downloaded at test time (`go mod download`, the Go module proxy) and read where Go
puts it; nothing of it is copied into this repository. A download that fails fails the test,
saying why: it is never skipped. v1.8.1 has no JAXJob (it came in v1.9): the count below checks
that, and tests/../sdk/python/tests/test_convert.py converts a JAXJob of v1.9's shape."""

from __future__ import annotations

import glob
import os
from typing import Any

import pytest
import yaml

import harness
from lockstep import convert
from lockstep.convert import KINDS

try:
    MODULE_DIR = harness.training_operator_dir()
    MODULE_ERROR = ""
except RuntimeError as e:
    MODULE_DIR, MODULE_ERROR = "", str(e)


def example_documents() -> list[tuple[str, dict[str, Any]]]:
    """(path in the module, document) for every job example of a kind the converter knows."""
    found = []
    for path in sorted(glob.glob(os.path.join(MODULE_DIR, "examples", "**", "*.y*ml"),
                                 recursive=True)):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict) and doc.get("kind") in KINDS:
                    found.append((os.path.relpath(path, MODULE_DIR), doc))
    return found


EXAMPLES = example_documents() if MODULE_DIR else []
IDS = [f"{p}:{d['metadata']['name']}" for p, d in EXAMPLES]


def test_the_module_is_there_and_holds_the_examples() -> None:
    assert not MODULE_ERROR, MODULE_ERROR
    kinds = sorted(d["kind"] for _, d in EXAMPLES)
    # 8 PyTorchJob, 5 TFJob, 2 MPIJob in v1.8.1; no JAXJob (added in v1.9).
    assert {k: kinds.count(k) for k in KINDS} == {"PyTorchJob": 8, "TFJob": 5, "MPIJob": 2,
                                                  "JAXJob": 0}, IDS


@pytest.fixture(scope="module")
def namespace() -> Any:
    why = harness.cluster_missing()
    if why:
        pytest.fail(f"the API server check needs the local cluster: {why}")
    harness.install_crd()
    name = f"sdk-convert-{harness.random_id()}"
    harness.create_namespace(name)
    yield name
    harness.delete_namespace(name)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=IDS)
def test_example_converts_and_the_apiserver_accepts_it(index: int, namespace: str) -> None:
    path, doc = EXAMPLES[index]
    result = convert(doc)  # raises on anything it cannot convert
    job = result.job
    assert job["kind"] == "TrainingJob" and job["metadata"]["name"] == doc["metadata"]["name"]
    spec = job["spec"]
    trainer = spec["template"]["spec"]["containers"][0]
    assert trainer.get("command"), f"{path}: the trainer has no command"
    # Every pod of the Kubeflow job is a pod of the TrainingJob, except MPI's launcher.
    replica_specs = next(v for k, v in doc["spec"].items() if k.endswith("ReplicaSpecs"))
    pods = sum(int(r.get("replicas", 1)) for t, r in replica_specs.items()
               if not (doc["kind"] == "MPIJob" and t == "Launcher"))
    assert spec.get("replicas", 0) + sum(r["replicas"] for r in spec.get("roles", [])) == pods
    job["metadata"]["namespace"] = namespace
    out = harness.kubectl("apply", "--dry-run=server", "-o", "yaml", "-f", "-",
                          stdin=yaml.safe_dump(job))
    stored = yaml.safe_load(out)
    assert stored["spec"]["framework"] == spec["framework"]
    assert stored["spec"]["failurePolicy"]["restartMode"] == "InPlace"  # defaults applied
    for warning in result.warnings:
        assert warning.field and warning.message
