"""TrainingJobClient: submit, watch and read TrainingJobs through the official Kubernetes client."""

from __future__ import annotations

import builtins
import os
import queue
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from lockstep import _api, ranks, spec
from lockstep.ranks import LogLine, RankStatus

JsonDict = dict[str, Any]
_IN_CLUSTER_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class TrainingJobError(RuntimeError):
    """A TrainingJob ended in a state the caller did not wait for."""

    def __init__(self, name: str, state: str, reason: str, message: str) -> None:
        self.name, self.state, self.reason, self.message = name, state, reason, message
        super().__init__(f"TrainingJob {name} {state}: {reason}"
                         + (f": {message}" if message else ""))


class JobFailedError(TrainingJobError):
    """wait() saw the job fail; `reason` and `message` are the job's status.reason/message."""


class WaitTimeoutError(TimeoutError):
    """wait() ran out of time; `job` is the object as last seen."""

    def __init__(self, name: str, until: Sequence[str], timeout: float, job: JsonDict) -> None:
        self.job = job
        state = (job.get("status") or {}).get("state") or "Pending"
        super().__init__(f"TrainingJob {name} not {'/'.join(until)} within {timeout:g} s "
                         f"(state {state})")


def _job_name(job: str | Mapping[str, Any]) -> str:
    if isinstance(job, str):
        return job
    return str((job.get("metadata") or {}).get("name"))


def _state(job: JsonDict) -> str:
    return str((job.get("status") or {}).get("state") or "Pending")


class TrainingJobClient:
    """Lockstep TrainingJobs in one namespace of one cluster.

    `namespace`: default the kubeconfig context's namespace (in a pod: the pod's), else
    "default". `context`: a kubeconfig context name; default the current one. `api_client`
    (and, for tests, `custom_api` and `core_api`) replace the clients built from kubeconfig.
    """

    def __init__(self, namespace: str | None = None, context: str | None = None, *,
                 config_file: str | None = None, api_client: k8s.ApiClient | None = None,
                 custom_api: Any = None, core_api: Any = None) -> None:
        context_namespace = None
        if api_client is None:
            api_client, context_namespace = _load_client(config_file, context)
        self.api_client = api_client
        self.namespace = namespace or context_namespace or "default"
        self._custom = custom_api or k8s.CustomObjectsApi(api_client)
        self._core = core_api or k8s.CoreV1Api(api_client)

    # --- submit -------------------------------------------------------------------------------

    def train(self, func: Callable[..., Any] | None = None, *,
              func_args: Mapping[str, Any] | None = None, script: str | None = None,
              args: Sequence[str] = (), command: Sequence[str] | None = None,
              name: str | None = None, workers: int = 1, procs_per_worker: int | None = None,
              gpus_per_worker: int = 0, image: str | None = None,
              env: Mapping[str, str] | None = None, framework: str = "PyTorch",
              cpu: str | None = None, memory: str | None = None,
              node_selector: Mapping[str, str] | None = None,
              max_restarts: int | None = None, labels: Mapping[str, str] | None = None,
              pod_spec_overrides: Mapping[str, Any] | None = None,
              python: str = "python") -> str:
        """Submits a TrainingJob and returns its name.

        What runs, one of: `func` (a function shipped by source, called with `func_args` as
        keyword arguments, which must be JSON), `script` (a Python file's path inside the image,
        run as `python script *args`), or `command` (any argv, run as given). Each of the
        `workers` pods runs `procs_per_worker` processes (default: `gpus_per_worker`, else 1)
        under the Lockstep launcher, which gives them `framework`'s environment.
        """
        if sum(x is not None for x in (func, script, command)) != 1:
            raise spec.SpecError("give exactly one of a function, script= or command=")
        if func is not None:
            argv = spec.function_command(func, func_args, python)
            base = func.__name__
        elif script is not None:
            argv = [python, script, *map(str, args)]
            base = os.path.splitext(os.path.basename(script))[0]
        else:
            assert command is not None
            argv = [*map(str, command), *map(str, args)]
            base = os.path.basename(argv[0]) if argv else "train"
        body = spec.training_job(
            command=argv, name=name, generate_name=None if name else spec.name_prefix(base),
            namespace=self.namespace, framework=framework, workers=workers,
            procs_per_worker=procs_per_worker, gpus_per_worker=gpus_per_worker, image=image,
            env=env, cpu=cpu, memory=memory, node_selector=node_selector,
            max_restarts=max_restarts, labels=labels, pod_spec_overrides=pod_spec_overrides)
        return self.create(body)

    def create(self, body: Mapping[str, Any]) -> str:
        """Creates a TrainingJob from its object (e.g. a converted manifest); returns its name."""
        created = self._custom.create_namespaced_custom_object(
            _api.GROUP, _api.VERSION, self.namespace, _api.PLURAL, dict(body))
        return str(created["metadata"]["name"])

    # --- read ---------------------------------------------------------------------------------

    def get(self, job: str | Mapping[str, Any]) -> JsonDict:
        """The TrainingJob object (a dict, as the API server returns it)."""
        obj: JsonDict = self._custom.get_namespaced_custom_object(
            _api.GROUP, _api.VERSION, self.namespace, _api.PLURAL, _job_name(job))
        return obj

    def list(self, label_selector: str | None = None) -> builtins.list[JsonDict]:
        """Every TrainingJob of the namespace."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        answer = self._custom.list_namespaced_custom_object(
            _api.GROUP, _api.VERSION, self.namespace, _api.PLURAL, **kwargs)
        return list(answer.get("items") or [])

    def delete(self, job: str | Mapping[str, Any]) -> None:
        """Deletes the job; its pods, Service and Secret go with it (owner references)."""
        self._custom.delete_namespaced_custom_object(
            _api.GROUP, _api.VERSION, self.namespace, _api.PLURAL, _job_name(job),
            body=k8s.V1DeleteOptions(propagation_policy="Background"))

    def progress(self, job: str | Mapping[str, Any]) -> JsonDict | None:
        """status.progress (step, totalSteps, percent, samplesPerSecond, etaSeconds,
        lastUpdate) as node 0's launcher last reported it; None before any report."""
        obj = self.get(job) if isinstance(job, str) else dict(job)
        progress = (obj.get("status") or {}).get("progress")
        return dict(progress) if progress else None

    def pods(self, job: str | Mapping[str, Any]) -> builtins.list[JsonDict]:
        """Every pod of the job, of every attempt still present, as dicts."""
        answer = self._core.list_namespaced_pod(
            self.namespace, label_selector=f"{_api.LABEL_JOB_NAME}={_job_name(job)}")
        return [self.api_client.sanitize_for_serialization(p) for p in answer.items]

    def status(self, job: str | Mapping[str, Any]) -> builtins.list[RankStatus]:
        """Per rank of the current attempt: pod, node, state, restarts, progress, and why it
        waits or failed."""
        obj = self.get(job)
        return ranks.rank_statuses(obj, self.pods(obj))

    # --- wait ---------------------------------------------------------------------------------

    def wait(self, job: str | Mapping[str, Any], until: str | Sequence[str] = "Succeeded",
             timeout: float | None = None) -> JsonDict:
        """Waits until the job's status.state is `until` (a state or several) and returns it.

        Raises JobFailedError with the job's reason and message when it fails (unless Failed is
        awaited), TrainingJobError when it succeeds while another state was awaited, and
        WaitTimeoutError after `timeout` seconds. Watches the job; polls nothing.
        """
        name = _job_name(job)
        wanted = [until] if isinstance(until, str) else list(until)
        for state in wanted:
            if state not in _api.STATES:
                raise ValueError(f"until={state!r} is not one of {', '.join(_api.STATES)}")
        deadline = None if timeout is None else time.monotonic() + timeout
        last: JsonDict = {}
        while True:
            answer = self._custom.list_namespaced_custom_object(
                _api.GROUP, _api.VERSION, self.namespace, _api.PLURAL,
                field_selector=f"metadata.name={name}")
            items = answer.get("items") or []
            if not items:
                raise TrainingJobError(name, "NotFound", "NotFound",
                                       f"no TrainingJob {name} in {self.namespace}")
            last = items[0]
            if self._settled(last, wanted):
                return last
            version = (answer.get("metadata") or {}).get("resourceVersion")
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise WaitTimeoutError(name, wanted, float(timeout or 0), last)
                watcher = k8s_watch.Watch()
                try:
                    for event in watcher.stream(
                            self._custom.list_namespaced_custom_object, _api.GROUP,
                            _api.VERSION, self.namespace, _api.PLURAL,
                            field_selector=f"metadata.name={name}", resource_version=version,
                            allow_watch_bookmarks=True,
                            timeout_seconds=max(1, int(min(remaining or 60, 60)))):
                        obj: JsonDict = event["object"]
                        if event["type"] == "DELETED":
                            raise TrainingJobError(name, "Deleted", "Deleted",
                                                   "the job was deleted while waiting")
                        if event["type"] in ("ADDED", "MODIFIED"):
                            last = obj
                            if self._settled(obj, wanted):
                                return obj
                    version = watcher.resource_version or version
                except ApiException as e:
                    if e.status == 410:  # the version is gone: list again
                        break
                    raise
                finally:
                    watcher.stop()

    @staticmethod
    def _settled(job: JsonDict, wanted: Sequence[str]) -> bool:
        state = _state(job)
        if state in wanted:
            return True
        status = job.get("status") or {}
        if state == "Failed":
            raise JobFailedError(_job_name(job), state, str(status.get("reason") or ""),
                                 str(status.get("message") or ""))
        if state == "Succeeded":
            if "Running" in wanted:
                return True  # it ran, and already finished
            raise TrainingJobError(_job_name(job), state, str(status.get("reason") or ""),
                                   f"it succeeded while {'/'.join(wanted)} was awaited")
        return False

    # --- logs ---------------------------------------------------------------------------------

    def logs(self, job: str | Mapping[str, Any], follow: bool = True,
             ranks: Sequence[int] | None = None, *,
             poll_seconds: float = 1.0) -> Iterator[LogLine]:
        """Every rank's log lines (LogLine; str() is `[rank N] text`).

        Without `follow`: the current attempt's logs as they are now, rank by rank. With it:
        the lines of every rank as they come, merged, across restarts (a new attempt's pods are
        followed as they start; in-place restarts keep the pods and their logs), until the job
        has finished and every log has ended. `ranks` keeps only those node ranks.
        """
        keep = None if ranks is None else {int(r) for r in ranks}
        name = _job_name(job)
        if not follow:
            yield from self._logs_now(name, keep)
            return
        yield from _LogFollower(self, name, keep, poll_seconds).run()

    def _logs_now(self, name: str, keep: set[int] | None) -> Iterator[LogLine]:
        obj = self.get(name)
        attempt = ranks.current_attempt(obj)
        for rank, pod in ranks.by_rank(ranks.pods_of_attempt(self.pods(obj), attempt), obj):
            if (keep is not None and rank not in keep) or not ranks.trainer_started(pod):
                continue
            try:
                text = self._core.read_namespaced_pod_log(
                    pod["metadata"]["name"], self.namespace, container=_trainer_name(pod))
            except ApiException as e:
                # Deleted since the list (a success policy that ends the job stops the pods
                # still running; a restart replaces them): its log went with it.
                if e.status == 404:
                    continue
                raise
            for line in str(text).splitlines():
                yield LogLine(rank, pod["metadata"]["name"], attempt, line)

    def _open_log(self, pod: JsonDict) -> Any:
        return self._core.read_namespaced_pod_log(
            pod["metadata"]["name"], self.namespace, container=_trainer_name(pod), follow=True,
            _preload_content=False)


def _trainer_name(pod: JsonDict) -> str:
    return str(pod["spec"]["containers"][0]["name"])


class _LogFollower:
    """One thread per followed pod streams its log into a queue; the caller's thread finds new
    pods (a new attempt's) every poll and yields the lines."""

    _END = object()

    def __init__(self, client: TrainingJobClient, name: str, keep: set[int] | None,
                 poll_seconds: float) -> None:
        self.client, self.name, self.keep, self.poll = client, name, keep, poll_seconds
        self.lines: queue.Queue[Any] = queue.Queue()
        self.followed: dict[str, threading.Thread] = {}  # pod uid -> its reader
        self.min_attempt: int | None = None
        self.responses: list[Any] = []
        self.lock = threading.Lock()

    def run(self) -> Iterator[LogLine]:
        try:
            while True:
                job = self.client.get(self.name)
                finished = _state(job) in _api.TERMINAL_STATES
                self._discover(job)
                # The job's end is read before the last look for pods, so none that started
                # before it is missed; after it only the open logs remain.
                deadline = time.monotonic() + self.poll
                while True:
                    wait = deadline - time.monotonic()
                    if finished and not self._alive():
                        wait = 0.05
                    try:
                        item = self.lines.get(timeout=max(0.0, wait))
                    except queue.Empty:
                        break
                    if item is not self._END:
                        yield item
                if finished and not self._alive() and self.lines.empty():
                    return
        finally:
            with self.lock:
                for response in self.responses:
                    _close(response)

    def _alive(self) -> bool:
        return any(t.is_alive() for t in self.followed.values())

    def _discover(self, job: JsonDict) -> None:
        attempt = ranks.current_attempt(job)
        if self.min_attempt is None:
            self.min_attempt = attempt  # older attempts' pods are history, not followed
        for pod in self.client.pods(job):
            uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
            if uid in self.followed or ranks.pod_attempt(pod) < self.min_attempt:
                continue
            rank = ranks.pod_rank(pod, job)
            if self.keep is not None and rank not in self.keep:
                continue
            if not ranks.trainer_started(pod):
                continue
            reader = threading.Thread(target=self._read, args=(pod, rank), daemon=True)
            self.followed[uid] = reader
            reader.start()

    def _read(self, pod: JsonDict, rank: int | None) -> None:
        name = pod["metadata"]["name"]
        attempt = ranks.pod_attempt(pod)
        try:
            response = self.client._open_log(pod)
            with self.lock:
                self.responses.append(response)
            pending = b""
            for chunk in response.stream(4096):
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    self.lines.put(LogLine(rank, name, attempt,
                                           raw.decode("utf-8", "replace").rstrip("\r")))
            if pending:
                self.lines.put(LogLine(rank, name, attempt, pending.decode("utf-8", "replace")))
        except ApiException as e:
            if e.status not in (400, 404):  # 400/404: the container or pod went meanwhile
                self.lines.put(LogLine(rank, name, attempt, f"(log unavailable: {e.reason})"))
        except Exception as e:  # noqa: BLE001 (a broken stream ends this rank's log only)
            self.lines.put(LogLine(rank, name, attempt, f"(log stream ended: {e})"))
        finally:
            self.lines.put(self._END)


def _close(response: Any) -> None:
    for method in ("close", "release_conn"):
        try:
            getattr(response, method)()
        except Exception:  # noqa: BLE001
            pass


def _load_client(config_file: str | None, context: str | None) -> tuple[k8s.ApiClient, str | None]:
    try:
        api_client = k8s_config.new_client_from_config(config_file=config_file, context=context)
        _, active = k8s_config.list_kube_config_contexts(config_file=config_file)
        if context:
            contexts, _ = k8s_config.list_kube_config_contexts(config_file=config_file)
            active = next((c for c in contexts if c.get("name") == context), active)
        namespace = ((active or {}).get("context") or {}).get("namespace")
        return api_client, namespace
    except k8s_config.ConfigException:
        if config_file or context or not os.path.exists(_IN_CLUSTER_NAMESPACE):
            raise
        k8s_config.load_incluster_config()
        with open(_IN_CLUSTER_NAMESPACE) as f:
            return k8s.ApiClient(), f.read().strip()
