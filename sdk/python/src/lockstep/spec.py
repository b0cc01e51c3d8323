"""What `TrainingJobClient.train` submits, built without a cluster (pure, unit-tested).

A function is shipped as the Kubeflow SDK ships one: its source text and its arguments as
JSON, in the trainer's command line, never pickled bytes. Every process the launcher starts runs

    python -c <BOOTSTRAP> <program>

where <program> is the function's source followed by a call with the JSON arguments; BOOTSTRAP
writes it to a file and runs it as __main__, so `__file__` exists and torch's spawn start method
can re-import it. The function must therefore be self-contained: a module-level `def` whose
imports are inside it, no closure, no decorator.
"""

from __future__ import annotations

import inspect
import json
import re
import textwrap
from typing import Any, Callable, Mapping, Sequence

from lockstep import _api

JsonDict = dict[str, Any]

DEFAULT_IMAGES = {
    "PyTorch": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
    "TensorFlow": "tensorflow/tensorflow:2.18.0",
}
# Kept small: the program travels in the pod spec, which etcd stores once per pod.
MAX_PROGRAM_BYTES = 128 * 1024

BOOTSTRAP = (
    "import os, runpy, sys, tempfile\n"
    "d = tempfile.mkdtemp(prefix='lockstep-sdk-')\n"
    "p = os.path.join(d, 'lockstep_train_func.py')\n"
    "open(p, 'w').write(sys.argv[1])\n"
    "sys.argv = [p]\n"
    "runpy.run_path(p, run_name='__main__')\n"
)


class SpecError(ValueError):
    """train() was given something it cannot submit; the message says what."""


def function_program(func: Callable[..., Any], kwargs: Mapping[str, Any] | None = None) -> str:
    """The Python program that runs `func(**kwargs)`: its source and a JSON call."""
    if not inspect.isfunction(func):
        raise SpecError(f"{func!r} is not a Python function (def): only functions are shipped")
    if func.__name__ == "<lambda>":
        raise SpecError("a lambda cannot be shipped: define the training function with def")
    if func.__code__.co_freevars:
        raise SpecError(f"{func.__name__}() uses variables of an enclosing function "
                        f"({', '.join(func.__code__.co_freevars)}): only its source travels, "
                        "so pass them as arguments")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as e:
        raise SpecError(f"the source of {func.__name__}() cannot be read ({e}): define it in a "
                        "file or a notebook cell") from e
    if source.lstrip().startswith("@"):
        raise SpecError(f"{func.__name__}() is decorated: only its source travels, without "
                        "the decorator's module; ship an undecorated function")
    try:
        arguments = json.dumps(dict(kwargs or {}), sort_keys=True)
    except (TypeError, ValueError) as e:
        raise SpecError(f"the arguments of {func.__name__}() must be JSON (numbers, strings, "
                        f"lists, dicts): {e}") from e
    origin = inspect.getsourcefile(func) or "<unknown>"
    program = (
        f"# {func.__name__}() shipped by the lockstep SDK from {origin}: its source and its\n"
        f"# arguments as JSON (no pickle).\n"
        f"{source}\n\n"
        f"if __name__ == '__main__':\n"
        f"    import json as _lockstep_json\n"
        f"    {func.__name__}(**_lockstep_json.loads({arguments!r}))\n"
    )
    if len(program.encode()) > MAX_PROGRAM_BYTES:
        raise SpecError(f"{func.__name__}() with its arguments is {len(program.encode())} bytes, "
                        f"more than {MAX_PROGRAM_BYTES}: put the code in the image and use "
                        "script=")
    return program


def function_command(func: Callable[..., Any], kwargs: Mapping[str, Any] | None = None,
                     python: str = "python") -> list[str]:
    return [python, "-c", BOOTSTRAP, function_program(func, kwargs)]


def name_prefix(text: str) -> str:
    """A generateName prefix from a function or script name: DNS-1035, room for 5 random
    characters within the 40 a TrainingJob's name may have."""
    base = re.sub(r"[^a-z0-9-]+", "-", text.lower().replace("_", "-"))
    base = re.sub(r"^[^a-z]+", "", base).strip("-")[:33].rstrip("-")
    return (base or "train") + "-"


def training_job(
    *,
    command: Sequence[str],
    name: str | None = None,
    generate_name: str | None = None,
    namespace: str | None = None,
    framework: str = "PyTorch",
    workers: int = 1,
    procs_per_worker: int | None = None,
    gpus_per_worker: int = 0,
    image: str | None = None,
    env: Mapping[str, str] | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    max_restarts: int | None = None,
    labels: Mapping[str, str] | None = None,
    pod_spec_overrides: Mapping[str, Any] | None = None,
) -> JsonDict:
    """The TrainingJob object for these arguments (docs/sdk.md lists them)."""
    if framework not in _api.FRAMEWORKS:
        raise SpecError(f"framework {framework!r} is not one of {', '.join(_api.FRAMEWORKS)}")
    if framework == "Ray":
        raise SpecError("Ray jobs need a head role: write the TrainingJob (examples/ray.yaml)")
    if workers < 1:
        raise SpecError(f"workers must be >= 1, not {workers}")
    if gpus_per_worker < 0:
        raise SpecError(f"gpus_per_worker must be >= 0, not {gpus_per_worker}")
    if procs_per_worker is not None and procs_per_worker < 1:
        raise SpecError(f"procs_per_worker must be >= 1, not {procs_per_worker}")
    if not command:
        raise SpecError("nothing to run: give a function, script= or command=")
    if image is None:
        image = DEFAULT_IMAGES.get(framework)
        if image is None:
            raise SpecError(f"no default image for {framework}: pass image=")
    if (name is None) == (generate_name is None):
        raise SpecError("give exactly one of name and generate_name")
    container: JsonDict = {"name": "trainer", "image": image, "command": list(command)}
    if env:
        container["env"] = [{"name": str(k), "value": str(v)} for k, v in env.items()]
    requests: JsonDict = {}
    limits: JsonDict = {}
    if cpu is not None:
        requests["cpu"] = str(cpu)
    if memory is not None:
        requests["memory"] = str(memory)
    if gpus_per_worker:
        limits["nvidia.com/gpu"] = gpus_per_worker
    if requests or limits:
        container["resources"] = {k: v for k, v in (("requests", requests), ("limits", limits))
                                  if v}
    pod: JsonDict = {"containers": [container]}
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    for key, value in (pod_spec_overrides or {}).items():
        if key == "containers":
            raise SpecError("pod_spec_overrides may not replace containers")
        pod[key] = value
    metadata: JsonDict = {"name": name} if name else {"generateName": generate_name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    spec: JsonDict = {"framework": framework, "replicas": workers,
                      "template": {"spec": pod}}
    if procs_per_worker is not None:
        spec["procsPerPod"] = procs_per_worker
    if max_restarts is not None:
        spec["failurePolicy"] = {"maxRestarts": max_restarts}
    return {"apiVersion": _api.API_VERSION, "kind": _api.KIND, "metadata": metadata,
            "spec": spec}
