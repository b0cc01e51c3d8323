"""Kubeflow training-operator jobs (PyTorchJob, TFJob, MPIJob, JAXJob) as TrainingJobs.

`convert(manifest)` is pure: it returns the equivalent TrainingJob and one `ConversionWarning` for every
field that has no equivalent, saying what was done instead. docs/migrate.md is the same mapping
field by field; tests/sdk/test_convert_examples.py runs it over the training-operator v1.8.1
examples. Fields the apiserver writes (status, uid, resourceVersion, managedFields, ...) are
dropped without a warning: they describe the old object, not the job.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from lockstep import _api

JsonDict = dict[str, Any]

KINDS = ("PyTorchJob", "TFJob", "MPIJob", "JAXJob")

# Kubeflow's defaults (pkg/apis/kubeflow.org/v1/*_types.go of v1.8.1; JAXJob from v1.9).
_DEFAULT_CONTAINER = {"PyTorchJob": "pytorch", "TFJob": "tensorflow", "MPIJob": "mpi",
                      "JAXJob": "jax"}
_DEFAULT_RESTART_POLICY = {"PyTorchJob": "OnFailure", "TFJob": "Never", "MPIJob": "Never",
                           "JAXJob": "OnFailure"}
_REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs",
                  "MPIJob": "mpiReplicaSpecs", "JAXJob": "jaxReplicaSpecs"}
_FRAMEWORK = {"PyTorchJob": "PyTorch", "TFJob": "TensorFlow", "MPIJob": "Horovod",
              "JAXJob": "JAX"}
# Kubeflow replica type -> Lockstep role ("worker" is spec.template/spec.replicas).
_ROLES = {
    "PyTorchJob": {"master": "master", "worker": "worker"},
    "TFJob": {"chief": "chief", "master": "chief", "ps": "ps", "worker": "worker",
              "evaluator": "evaluator"},
    "MPIJob": {"launcher": "launcher", "worker": "worker"},
    "JAXJob": {"worker": "worker"},
}
# Exit codes the launcher itself reports (docs/launcher.md): a lost peer, a hang, a refused or
# timed-out join, a launcher error. Kubeflow's ExitCode policy calls 1-127 permanent; these must
# stay retryable or one lost node would fail the job.
_LAUNCHER_EXIT_CODES = range(75, 80)
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp",
                    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                    "selfLink", "ownerReferences", "finalizers", "generateName")
_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class ConversionWarning:
    """A field without an equivalent: `field` is its path in the source manifest."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass
class Conversion:
    job: JsonDict
    warnings: list[ConversionWarning]


class ConversionError(ValueError):
    """The manifest is not a job this converter knows, or is malformed."""


class _Context:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.warnings: list[ConversionWarning] = []

    def warn(self, field: str, message: str) -> None:
        self.warnings.append(ConversionWarning(field, message))


def convert(manifest: Mapping[str, Any]) -> Conversion:
    """Converts one Kubeflow job manifest; raises ConversionError for anything else."""
    if not isinstance(manifest, Mapping):
        raise ConversionError("the manifest is not a YAML/JSON object")
    kind = manifest.get("kind")
    if kind not in KINDS:
        raise ConversionError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    api_version = str(manifest.get("apiVersion", ""))
    if not api_version.startswith("kubeflow.org/"):
        raise ConversionError(f"apiVersion {api_version!r} is not kubeflow.org/*")
    ctx = _Context(kind)
    spec = manifest.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise ConversionError("spec is not an object")
    replica_specs = _replica_specs(ctx, spec)
    out_spec: JsonDict = {"framework": _FRAMEWORK[kind]}
    job: JsonDict = {"apiVersion": _api.API_VERSION, "kind": _api.KIND,
                     "metadata": _metadata(ctx, manifest.get("metadata") or {}), "spec": out_spec}
    if kind == "MPIJob":
        _convert_mpi(ctx, spec, replica_specs, out_spec)
    else:
        _convert_replicas(ctx, spec, replica_specs, out_spec)
    if kind == "PyTorchJob":
        _convert_pytorch_extras(ctx, spec, out_spec)
    elif kind == "TFJob":
        _convert_tf_extras(ctx, spec, out_spec)
    elif kind == "JAXJob":
        ctx.warn("spec.jaxReplicaSpecs", "JAX reads no coordinator from the environment by "
                 "itself: call jax.distributed.initialize() with the launcher's "
                 "JAX_COORDINATOR_ADDRESS, LOCKSTEP_NUM_PROCESSES and LOCKSTEP_PROCESS_ID "
                 "(docs/frameworks.md), as Kubeflow's env did")
    _convert_run_policy(ctx, spec, replica_specs, out_spec)
    known = {"runPolicy", "elasticPolicy", "nprocPerNode", "successPolicy", "slotsPerWorker",
             "cleanPodPolicy", "mainContainer", "enableDynamicWorker", _REPLICA_SPECS[kind]}
    for key in spec:
        if key not in known:
            ctx.warn(f"spec.{key}", "not a field this converter knows: dropped")
    return Conversion(job, ctx.warnings)


def convert_all(documents: Iterable[Any]) -> list[Conversion]:
    """Converts every document of a multi-document manifest (empty documents skipped)."""
    return [convert(doc) for doc in documents if doc]


# --- metadata -------------------------------------------------------------------------------


def _metadata(ctx: _Context, meta: Mapping[str, Any]) -> JsonDict:
    out: JsonDict = {}
    name = str(meta.get("name") or "")
    if not name:
        if meta.get("generateName"):
            raise ConversionError("metadata.generateName without a name: give the job a name "
                                  "(a TrainingJob's name must be at most 40 characters)")
        raise ConversionError("metadata.name is missing")
    fixed = _job_name(name)
    if fixed != name:
        ctx.warn("metadata.name", f"{name!r} is not a DNS-1035 label of at most 40 characters "
                 f"(it prefixes every pod's hostname): renamed {fixed!r}")
    out["name"] = fixed
    for key in ("namespace", "labels", "annotations"):
        if meta.get(key):
            out[key] = copy.deepcopy(meta[key])
    for key in meta:
        if key not in ("name", "namespace", "labels", "annotations") + _SERVER_METADATA:
            ctx.warn(f"metadata.{key}", "no equivalent: dropped")
    return out


def _job_name(name: str) -> str:
    if len(name) <= 40 and _NAME_RE.match(name):
        return name
    fixed = re.sub(r"[^-a-z0-9]", "-", name.lower())
    fixed = re.sub(r"^[^a-z]+", "", fixed)[:40].rstrip("-")
    return fixed or "job"


# --- replicas -------------------------------------------------------------------------------


def _replica_specs(ctx: _Context, spec: Mapping[str, Any]) -> dict[str, JsonDict]:
    key = _REPLICA_SPECS[ctx.kind]
    specs = spec.get(key)
    if not isinstance(specs, Mapping) or not specs:
        raise ConversionError(f"spec.{key} is missing or empty")
    out: dict[str, JsonDict] = {}
    roles = _ROLES[ctx.kind]
    for rtype, rspec in specs.items():
        if str(rtype).lower() not in roles:
            raise ConversionError(f"spec.{key}.{rtype}: a {ctx.kind} has no replica type "
                                  f"{rtype!r} (known: {', '.join(sorted(roles))})")
        if not isinstance(rspec, Mapping) or not isinstance(rspec.get("template"), Mapping):
            raise ConversionError(f"spec.{key}.{rtype}.template is missing")
        out[str(rtype)] = dict(rspec)
    return out


def _replicas(rspec: Mapping[str, Any]) -> int:
    value = rspec.get("replicas")
    return 1 if value is None else int(value)


def _convert_replicas(ctx: _Context, spec: Mapping[str, Any],
                      replica_specs: Mapping[str, JsonDict], out: JsonDict) -> None:
    key = _REPLICA_SPECS[ctx.kind]
    roles: list[JsonDict] = []
    worker_type = next((t for t in replica_specs if t.lower() == "worker"), None)
    # Roles in the order of ranks Kubeflow gave them: leaders (chief/master) first.
    order = {"chief": 0, "master": 0, "worker": 1, "ps": 2, "evaluator": 3}
    for rtype in sorted(replica_specs, key=lambda t: order.get(t.lower(), 9)):
        rspec = replica_specs[rtype]
        path = f"spec.{key}.{rtype}"
        template = _template(ctx, rspec["template"], path + ".template")
        role = _ROLES[ctx.kind][rtype.lower()]
        if rtype.lower() == "master" and ctx.kind == "TFJob":
            ctx.warn(path, "the Master replica becomes role 'chief': the launcher's TF_CONFIG "
                     "names it chief, as TensorFlow 2 does")
        if role == "worker":
            out["replicas"] = _replicas(rspec)
            out["template"] = template
        else:
            replicas = _replicas(rspec)
            if replicas < 1:
                ctx.warn(path + ".replicas", "0 replicas: the role is left out")
                continue
            roles.append({"name": role, "replicas": replicas, "template": template})
    if worker_type is None:
        if roles and ctx.kind == "PyTorchJob":
            # A Master alone: it is the whole job, so it is the worker.
            master = roles.pop(0)
            out["replicas"] = master["replicas"]
            out["template"] = master["template"]
        else:
            out["replicas"] = 0
            if roles:
                out["template"] = copy.deepcopy(roles[0]["template"])
    if roles:
        out["roles"] = roles


def _template(ctx: _Context, template: Mapping[str, Any], path: str,
              container_name: str | None = None, convert_command: bool = True) -> JsonDict:
    out: JsonDict = copy.deepcopy(dict(template))
    pod = out.setdefault("spec", {})
    containers = pod.get("containers") or []
    if not containers:
        raise ConversionError(f"{path}.spec.containers is empty")
    want = container_name or _DEFAULT_CONTAINER[ctx.kind]
    index = next((i for i, c in enumerate(containers) if c.get("name") == want), None)
    if index is None:
        index = 0
        if len(containers) > 1:
            ctx.warn(f"{path}.spec.containers", f"no container named {want!r}: the first, "
                     f"{containers[0].get('name')!r}, is taken as the trainer")
    elif index != 0:
        # Lockstep's trainer is the first container (the launcher wraps it).
        containers.insert(0, containers.pop(index))
    trainer = containers[0]
    cpath = f"{path}.spec.containers[{trainer.get('name')}]"
    if pod.get("restartPolicy"):
        ctx.warn(f"{path}.spec.restartPolicy", "Lockstep's pods never restart in place "
                 "(the launcher restarts the processes; restartPolicy: Never): dropped")
        del pod["restartPolicy"]
    if pod.get("schedulerName"):
        ctx.warn(f"{path}.spec.schedulerName", f"{pod['schedulerName']!r}: Lockstep's gang "
                 "scheduler binds every pod of the job together: dropped")
        del pod["schedulerName"]
    annotations = (out.get("metadata") or {}).get("annotations") or {}
    if "scheduling.k8s.io/group-name" in annotations:
        ctx.warn(f"{path}.metadata.annotations[scheduling.k8s.io/group-name]",
                 "Volcano's pod group: kept but unused, Lockstep places the whole job as one gang")
    if convert_command:
        _convert_command(ctx, trainer, cpath)
    return out


def _convert_command(ctx: _Context, trainer: JsonDict, path: str) -> None:
    command = [str(c) for c in trainer.get("command") or []]
    args = [str(a) for a in trainer.get("args") or []]
    if not command:
        if args and not args[0].startswith("-"):
            ctx.warn(path + ".command", "no command, only args (the image's ENTRYPOINT runs "
                     f"them): {args[0]!r} looks like a program, so the args are taken as the "
                     "command the launcher wraps; prepend the ENTRYPOINT if it is not a "
                     "wrapper such as a shell or `python`")
            trainer["command"], trainer["args"] = args, []
            del trainer["args"]
            return
        ctx.warn(path + ".command", f"no command (the image {trainer.get('image')!r} runs its "
                 "ENTRYPOINT, which this converter cannot read): the launcher needs a command "
                 "to wrap, so the job runs a placeholder that fails with exit code 2 saying so"
                 + (" (the args are kept after it)" if args else "") + "; set the image's "
                 "ENTRYPOINT as command")
        trainer["command"] = ["/bin/sh", "-c",
                              "echo 'converted without a command: set "
                              "spec.template.spec.containers[0].command to the image ENTRYPOINT'"
                              " >&2; exit 2", "placeholder"]
        return
    stripped = _strip_torchrun(command + args)
    if stripped is not None:
        argv, nproc, dropped = stripped
        ctx.warn(path + ".command", "torchrun wrapper removed: the Lockstep launcher does its "
                 "job (starts the processes with torchrun's environment and rendezvous)"
                 + (f"; its options {' '.join(dropped)} dropped" if dropped else ""))
        if nproc is not None:
            ctx.nproc_from_torchrun = nproc  # type: ignore[attr-defined]
        trainer["command"], trainer["args"] = argv, []
        if not trainer["args"]:
            del trainer["args"]


_TORCHRUN_VALUE_OPTS = {"--nnodes", "--nproc-per-node", "--nproc_per_node", "--rdzv-backend",
                        "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id",
                        "--rdzv_id", "--rdzv-conf", "--rdzv_conf", "--max-restarts",
                        "--max_restarts", "--monitor-interval", "--monitor_interval",
                        "--start-method", "--start_method", "--role", "--node-rank",
                        "--node_rank", "--master-addr", "--master_addr", "--master-port",
                        "--master_port", "--local-addr", "--local_addr", "--log-dir",
                        "--log_dir", "-r", "--redirects", "-t", "--tee", "--local-ranks-filter",
                        "--local_ranks_filter", "--logs-specs", "--logs_specs"}


def _strip_torchrun(argv: list[str]) -> tuple[list[str], int | None, list[str]] | None:
    """`torchrun [opts] script args` or `python -m torch.distributed.run|launch ...` -> the
    script's own command line, the --nproc-per-node value, and the options dropped."""
    if argv and argv[0].rsplit("/", 1)[-1] == "torchrun":
        rest = argv[1:]
    elif (len(argv) >= 3 and re.fullmatch(r"python[0-9.]*", argv[0].rsplit("/", 1)[-1])
          and argv[1] == "-m" and argv[2] in ("torch.distributed.run",
                                              "torch.distributed.launch")):
        rest = argv[3:]
    else:
        return None
    dropped: list[str] = []
    nproc: int | None = None
    no_python = False
    module = False
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        opt = rest[i]
        name, _, inline = opt.partition("=")
        if name in ("--no-python", "--no_python"):
            no_python = True
        elif name == "-m" or name == "--module":
            module = True
        elif name in _TORCHRUN_VALUE_OPTS and not inline and i + 1 < len(rest):
            inline = rest[i + 1]
            i += 1
            opt = f"{opt} {inline}"
        if name in ("--nproc-per-node", "--nproc_per_node") and inline.isdigit():
            nproc = int(inline)
        if name not in ("-m", "--module", "--no-python", "--no_python"):
            dropped.append(opt)
        i += 1
    program = rest[i:]
    if no_python:
        return program, nproc, dropped
    return (["python", "-m"] if module else ["python"]) + program, nproc, dropped


# --- PyTorch, TF ----------------------------------------------------------------------------


def _procs(ctx: _Context, value: Any, path: str) -> int | None:
    text = str(value).strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    if text in ("auto", "gpu"):
        return None  # Lockstep's default: the GPUs the trainer requests, else 1
    ctx.warn(path, f"{text!r} (one process per CPU) has no equivalent: procsPerPod is left to "
             "its default, the trainer's nvidia.com/gpu count, else 1")
    return None


def _convert_pytorch_extras(ctx: _Context, spec: Mapping[str, Any], out: JsonDict) -> None:
    nproc: int | None = getattr(ctx, "nproc_from_torchrun", None)
    elastic = spec.get("elasticPolicy") or {}
    if spec.get("nprocPerNode") is not None:
        nproc = _procs(ctx, spec["nprocPerNode"], "spec.nprocPerNode")
    elif elastic.get("nProcPerNode") is not None:
        nproc = _procs(ctx, elastic["nProcPerNode"], "spec.elasticPolicy.nProcPerNode")
    if nproc is not None:
        out["procsPerPod"] = nproc
        for role in out.get("roles", []):
            role["procsPerPod"] = nproc
    if not elastic:
        return
    replicas = int(out.get("replicas", 1))
    low = int(elastic.get("minReplicas") or replicas or 1)
    high = int(elastic.get("maxReplicas") or max(replicas, low))
    out["elastic"] = {"minReplicas": low, "maxReplicas": max(low, high)}
    if not low <= replicas <= high:
        clamped = min(max(replicas, low), high)
        ctx.warn("spec.pytorchReplicaSpecs.Worker.replicas", f"{replicas} is outside "
                 f"[{low}, {high}]: starts with {clamped} workers")
        out["replicas"] = clamped
    if elastic.get("maxRestarts") is not None:
        ctx.elastic_max_restarts = int(elastic["maxRestarts"])  # type: ignore[attr-defined]
    for key in ("rdzvBackend", "rdzvPort", "rdzvHost", "rdzvId", "rdzvConf", "standalone"):
        if key in elastic:
            ctx.warn(f"spec.elasticPolicy.{key}", "the launcher is the rendezvous (its own "
                     "server on node 0; torchrun's environment for the processes): dropped")
    if elastic.get("metrics"):
        ctx.warn("spec.elasticPolicy.metrics", "Lockstep makes no HorizontalPodAutoscaler: "
                 "dropped. The TrainingJob has a scale subresource within the elastic bounds, "
                 "so an HPA whose scaleTargetRef is kind TrainingJob can use these metrics")
    for key in elastic:
        if key not in ("minReplicas", "maxReplicas", "maxRestarts", "nProcPerNode", "metrics",
                       "rdzvBackend", "rdzvPort", "rdzvHost", "rdzvId", "rdzvConf",
                       "standalone"):
            ctx.warn(f"spec.elasticPolicy.{key}", "not a field this converter knows: dropped")


def _convert_tf_extras(ctx: _Context, spec: Mapping[str, Any], out: JsonDict) -> None:
    roles = {r["name"] for r in out.get("roles", [])}
    policy = spec.get("successPolicy")
    if policy == "AllWorkers":
        out["successPolicy"] = {"operator": "All", "targetRoles": ["worker"]}
    elif "chief" not in roles and int(out.get("replicas", 0)) > 1:
        ctx.warn("spec.successPolicy", "Kubeflow's default ends a job without a chief when "
                 "worker 0 succeeds; Lockstep's when every worker has (successPolicy All "
                 "on role worker)")
    if spec.get("enableDynamicWorker"):
        ctx.warn("spec.enableDynamicWorker", "no equivalent for a parameter-server job's "
                 "dynamic workers: dropped (spec.elastic resizes PyTorch-style gangs)")


# --- MPI (Horovod) --------------------------------------------------------------------------

_MPIRUN_VALUE_OPTS = {"-np", "-n", "-c", "-N", "-npernode", "--npernode", "-bind-to",
                      "--bind-to", "-map-by", "--map-by", "-rank-by", "--rank-by", "-hostfile",
                      "--hostfile", "-H", "--host", "-host", "-wdir", "--wdir", "-x",
                      "--num-proc", "--min-np", "--min-num-proc", "--max-np", "--max-num-proc",
                      "--hosts", "--host-discovery-script", "-p", "--ssh-port",
                      "--ssh-identity-file", "--network-interface", "--start-timeout",
                      "--output-filename", "--slots-per-host", "--slots", "--reset-limit",
                      "--blacklist-cooldown-range", "--cooldown-range", "--log-level",
                      "--mpi-args", "--gloo-timeout-seconds", "--prefix", "-s"}
_MPIRUN_TWO_VALUE_OPTS = {"-mca", "--mca", "-gmca", "--gmca"}


@dataclass
class _MpiCommand:
    program: list[str]
    np: int | None
    min_np: int | None
    max_np: int | None
    env: dict[str, str | None]
    dropped: list[str]
    horovodrun: bool


def _parse_mpi_command(argv: list[str]) -> _MpiCommand | None:
    if not argv:
        return None
    tool = argv[0].rsplit("/", 1)[-1]
    if tool not in ("mpirun", "mpiexec", "horovodrun", "orterun"):
        return None
    parsed = _MpiCommand([], None, None, None, {}, [], tool == "horovodrun")
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        name, eq, inline = opt.partition("=")
        values: list[str] = []
        if name in _MPIRUN_TWO_VALUE_OPTS:
            values, i = argv[i + 1:i + 3], i + 2
        elif name in _MPIRUN_VALUE_OPTS:
            if eq:
                values = [inline]
            elif i + 1 < len(argv):
                values, i = [argv[i + 1]], i + 1
        i += 1
        if name in ("-np", "-n", "--num-proc") and values and values[0].isdigit():
            parsed.np = int(values[0])
        elif name in ("--min-np", "--min-num-proc") and values and values[0].isdigit():
            parsed.min_np = int(values[0])
        elif name in ("--max-np", "--max-num-proc") and values and values[0].isdigit():
            parsed.max_np = int(values[0])
        elif name == "-x" and values:
            var, has_value, value = values[0].partition("=")
            parsed.env[var] = value if has_value else None
        else:
            parsed.dropped.append(" ".join([opt] + values))
    parsed.program = argv[i:]
    return parsed


def _convert_mpi(ctx: _Context, spec: Mapping[str, Any], replica_specs: Mapping[str, JsonDict],
                 out: JsonDict) -> None:
    launcher_type = next((t for t in replica_specs if t.lower() == "launcher"), None)
    worker_type = next((t for t in replica_specs if t.lower() == "worker"), None)
    if launcher_type is None or worker_type is None:
        raise ConversionError("an MPIJob needs a Launcher and a Worker replica spec")
    main = str(spec.get("mainContainer") or "mpi")
    lpath = f"spec.mpiReplicaSpecs.{launcher_type}.template"
    wpath = f"spec.mpiReplicaSpecs.{worker_type}.template"
    launcher = copy.deepcopy(dict(replica_specs[launcher_type]["template"]))
    lcontainers = (launcher.get("spec") or {}).get("containers") or []
    ltrainer = next((c for c in lcontainers if c.get("name") == main),
                    lcontainers[0] if lcontainers else None)
    if ltrainer is None:
        raise ConversionError(f"{lpath}.spec.containers is empty")
    argv = [str(a) for a in (ltrainer.get("command") or []) + (ltrainer.get("args") or [])]
    mpi = _parse_mpi_command(argv)
    if mpi is None:
        raise ConversionError(f"{lpath}: the launcher's command {' '.join(argv[:3])!r}... is "
                              "not mpirun/mpiexec/horovodrun: cannot tell the training command")
    if not mpi.program:
        raise ConversionError(f"{lpath}: mpirun/horovodrun names no program to run")
    if not mpi.horovodrun and "horovod" not in str(ltrainer.get("image", "")).lower():
        out["framework"] = "Generic"
        ctx.warn(f"{lpath}.spec.containers[{ltrainer.get('name')}].command", "not Horovod "
                 "(no horovodrun, no horovod image): framework Generic, and no mpirun runs: "
                 "each process gets LOCKSTEP_* rank and size variables instead of MPI's")
    ctx.warn(lpath, "the Launcher pod has no equivalent: the workers run its program "
             f"({' '.join(mpi.program)}) themselves, each under the Lockstep launcher, which "
             "gives Horovod its Gloo rendezvous (HOROVOD_*): no mpirun, no ssh")
    if mpi.dropped:
        ctx.warn(f"{lpath}.spec.containers[{ltrainer.get('name')}].command",
                 f"mpirun/horovodrun options dropped: {'; '.join(mpi.dropped)}")
    workers = _replicas(replica_specs[worker_type])
    slots = int(spec.get("slotsPerWorker") or 1)
    template = _template(ctx, replica_specs[worker_type]["template"], wpath, main,
                         convert_command=False)
    trainer = template["spec"]["containers"][0]
    if trainer.get("command"):
        ctx.warn(f"{wpath}.spec.containers[{trainer.get('name')}].command",
                 "the worker's own command (an sshd for mpirun) is replaced by the "
                 "launcher's program")
    trainer["command"] = mpi.program
    trainer.pop("args", None)
    env = {e.get("name"): e for e in trainer.get("env") or []}
    for e in ltrainer.get("env") or []:
        env.setdefault(e.get("name"), copy.deepcopy(e))
    for var, value in mpi.env.items():
        if value is not None:
            env.setdefault(var, {"name": var, "value": value})
        elif var not in env:
            ctx.warn(f"{lpath} -x {var}", "mpirun exported the launcher's own value: the "
                     "workers keep theirs (their image's, or the pod's env)")
    if env:
        trainer["env"] = list(env.values())
    out["replicas"] = workers
    out["procsPerPod"] = slots
    out["template"] = template
    if mpi.np is not None and mpi.np != workers * slots:
        ctx.warn(f"{lpath} -np", f"-np {mpi.np} differs from Worker.replicas x "
                 f"slotsPerWorker = {workers * slots}: Lockstep runs {workers * slots} "
                 "processes, procsPerPod on every worker pod")
    if mpi.min_np is not None or mpi.max_np is not None:
        low = math.ceil((mpi.min_np or workers * slots) / slots)
        high = max(low, math.ceil((mpi.max_np or workers * slots) / slots))
        out["elastic"] = {"minReplicas": max(1, low), "maxReplicas": high}
        out["replicas"] = min(max(workers, out["elastic"]["minReplicas"]), high)
        ctx.warn(f"{lpath} --min-np/--max-np", f"elastic Horovod becomes spec.elastic in pods "
                 f"({low}..{high} pods of {slots}); the host discovery script is not needed "
                 "(the operator resizes the gang)")
    if spec.get("cleanPodPolicy") and not (spec.get("runPolicy") or {}).get("cleanPodPolicy"):
        ctx.mpi_clean_pod_policy = spec["cleanPodPolicy"]  # type: ignore[attr-defined]


# --- run policy and failures ----------------------------------------------------------------


def _convert_run_policy(ctx: _Context, spec: Mapping[str, Any],
                        replica_specs: Mapping[str, JsonDict], out: JsonDict) -> None:
    run = spec.get("runPolicy") or {}
    run_out: JsonDict = {}
    clean = run.get("cleanPodPolicy") or getattr(ctx, "mpi_clean_pod_policy", None)
    # Kubeflow's default is None (keep every pod); Lockstep's is Running: say None explicitly.
    run_out["cleanPodPolicy"] = clean or "None"
    if clean not in (None, "All", "Running", "None"):
        raise ConversionError(f"spec.runPolicy.cleanPodPolicy {clean!r} is not All, Running or "
                              "None")
    if run.get("ttlSecondsAfterFinished") is not None:
        run_out["ttlSecondsAfterFinished"] = int(run["ttlSecondsAfterFinished"])
    if run.get("activeDeadlineSeconds") is not None:
        deadline = int(run["activeDeadlineSeconds"])
        if deadline >= 1:
            run_out["activeDeadlineSeconds"] = deadline
        else:
            ctx.warn("spec.runPolicy.activeDeadlineSeconds", f"{deadline}: not a deadline "
                     "Lockstep accepts (>= 1): dropped")
    if run.get("suspend") is not None:
        run_out["suspend"] = bool(run["suspend"])
    out["runPolicy"] = run_out
    _convert_scheduling(ctx, run.get("schedulingPolicy") or {}, out)
    _convert_failures(ctx, run, replica_specs, out)
    for key in run:
        if key not in ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
                       "suspend", "schedulingPolicy", "backoffLimit"):
            ctx.warn(f"spec.runPolicy.{key}", "not a field this converter knows: dropped")


def _total_pods(out: Mapping[str, Any]) -> int:
    return int(out.get("replicas", 0)) + sum(int(r["replicas"]) for r in out.get("roles", []))


def _convert_scheduling(ctx: _Context, policy: Mapping[str, Any], out: JsonDict) -> None:
    path = "spec.runPolicy.schedulingPolicy"
    if policy.get("priorityClass"):
        out["priorityClassName"] = policy["priorityClass"]
    if policy.get("minAvailable") is not None:
        total = _total_pods(out)
        if int(policy["minAvailable"]) != total:
            ctx.warn(path + ".minAvailable", f"{policy['minAvailable']}: Lockstep's gang is "
                     f"always the whole job ({total} pods), placed together or not at all; "
                     "a job that may run smaller needs spec.elastic")
    if policy.get("queue"):
        ctx.warn(path + ".queue", f"{policy['queue']!r} is a Volcano queue: dropped. Lockstep "
                 "queues through Kueue: label the job kueue.x-k8s.io/queue-name with a "
                 "LocalQueue's name (docs/queues.md)")
    if policy.get("minResources"):
        ctx.warn(path + ".minResources", "the gang scheduler sums the pods' own requests: "
                 "dropped")
    if policy.get("scheduleTimeoutSeconds") is not None:
        ctx.warn(path + ".scheduleTimeoutSeconds", "a job waits for capacity until it fits "
                 "(Scheduled=False says why) or its activeDeadlineSeconds: dropped")
    for key in policy:
        if key not in ("priorityClass", "minAvailable", "queue", "minResources",
                       "scheduleTimeoutSeconds"):
            ctx.warn(f"{path}.{key}", "not a field this converter knows: dropped")


def _convert_failures(ctx: _Context, run: Mapping[str, Any],
                      replica_specs: Mapping[str, JsonDict], out: JsonDict) -> None:
    failure: JsonDict = {}
    policies = {t: str(r.get("restartPolicy") or _DEFAULT_RESTART_POLICY[ctx.kind])
                for t, r in replica_specs.items()}
    if ctx.kind == "MPIJob":
        policies = {t: p for t, p in policies.items() if t.lower() == "worker"} or policies
    distinct = sorted(set(policies.values()))
    policy = policies.get(next((t for t in policies if t.lower() == "worker"), ""),
                          distinct[0])
    if len(distinct) > 1:
        ctx.warn("spec.*ReplicaSpecs.*.restartPolicy", f"replicas differ ({policies}): "
                 f"Lockstep restarts the gang as one, with the workers' policy, {policy}")
    backoff = run.get("backoffLimit")
    elastic_restarts = getattr(ctx, "elastic_max_restarts", None)
    if policy == "Never":
        failure["maxRestarts"] = 0
        if backoff:
            ctx.warn("spec.runPolicy.backoffLimit", f"{backoff} with restartPolicy Never "
                     "(no restart): maxRestarts 0")
    else:
        if policy == "Always":
            ctx.warn("restartPolicy", "Always also restarts a pod that exited 0; Lockstep ends "
                     "the job when its success policy is met and restarts on failures only "
                     "(as OnFailure)")
        if policy == "ExitCode":
            codes = [c for c in range(1, 128) if c not in _LAUNCHER_EXIT_CODES]
            failure["rules"] = [{"name": "permanent-exit-codes", "action": "FailJob",
                                 "onExitCodes": {"operator": "In", "values": codes}}]
            ctx.warn("restartPolicy", "ExitCode: exit codes 1-127 fail the job, except the "
                     "launcher's own 75-79 (a lost peer, a hang, a failed join: a node's "
                     "failure, not the program's), which restart it like 128-255")
        if elastic_restarts is not None:
            failure["maxRestarts"] = elastic_restarts
            if backoff is not None and int(backoff) != elastic_restarts:
                ctx.warn("spec.runPolicy.backoffLimit", f"{backoff} beside "
                         f"elasticPolicy.maxRestarts {elastic_restarts}: Lockstep has one "
                         "budget of restarts, maxRestarts, and takes elasticPolicy's")
        elif backoff is not None:
            failure["maxRestarts"] = int(backoff)
        else:
            ctx.warn("spec.runPolicy.backoffLimit", "unset (Kubeflow then restarts "
                     "without a bound): Lockstep's default maxRestarts 3 applies")
    out["failurePolicy"] = failure
