"""A fake of the two kubernetes-client APIs the SDK calls (CustomObjectsApi, CoreV1Api), for the
SDK's pure logic only: what it sends, how it reads answers, watches and log streams. How the
API server behaves is tested against a real one (tests/sdk/)."""

from __future__ import annotations

import copy
import itertools
import json
import threading
from typing import Any, Callable

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

JsonDict = dict[str, Any]


def api_error(status: int, reason: str) -> ApiException:
    e = ApiException(status=status, reason=reason)
    e.body = json.dumps({"kind": "Status", "code": status, "message": reason})
    return e


class FakeStream:
    """What `_preload_content=False` returns: urllib3's HTTPResponse, as far as the SDK and
    kubernetes.watch use it."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    def stream(self, amt: Any = None, decode_content: Any = None) -> Any:
        for chunk in self.chunks:
            if self.closed:
                return
            yield chunk

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


class FakeCustomObjectsApi:
    """TrainingJobs in memory. `watch_updates`: statuses the next watch delivers as MODIFIED
    events, one each, applied to the stored job; `on_get`: called before each get with the
    number of gets so far (the test moves the world forward there)."""

    def __init__(self) -> None:
        self.jobs: dict[str, JsonDict] = {}
        self.created: list[JsonDict] = []
        self.deleted: list[str] = []
        self.watch_calls: list[JsonDict] = []
        self.watch_updates: list[tuple[str, str, JsonDict]] = []  # (event type, name, status)
        self.watch_error: ApiException | None = None
        self.on_get: Callable[[int], None] | None = None
        self.gets = 0
        self._version = itertools.count(100)
        self._names = itertools.count(1)

    def _bump(self, obj: JsonDict) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._version))

    def put(self, name: str, status: JsonDict | None = None, spec: JsonDict | None = None) -> JsonDict:
        obj = self.jobs.get(name) or {"apiVersion": "lockstep.dev/v1alpha1",
                                      "kind": "TrainingJob",
                                      "metadata": {"name": name, "namespace": "ns",
                                                   "uid": f"uid-{name}"},
                                      "spec": spec or {"framework": "PyTorch", "replicas": 2}}
        if status is not None:
            obj["status"] = status
        self._bump(obj)
        self.jobs[name] = obj
        return obj

    def create_namespaced_custom_object(self, group: str, version: str, namespace: str,
                                        plural: str, body: JsonDict, **_: Any) -> JsonDict:
        assert (group, version, plural) == ("lockstep.dev", "v1alpha1", "trainingjobs")
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if "name" not in meta:
            meta["name"] = meta.pop("generateName") + f"x{next(self._names):04d}"
        if meta["name"] in self.jobs:
            raise api_error(409, "AlreadyExists")
        meta["namespace"] = namespace
        meta["uid"] = f"uid-{meta['name']}"
        self._bump(obj)
        self.jobs[meta["name"]] = obj
        self.created.append(copy.deepcopy(body))
        return copy.deepcopy(obj)

    def get_namespaced_custom_object(self, group: str, version: str, namespace: str,
                                     plural: str, name: str, **_: Any) -> JsonDict:
        if self.on_get is not None:
            self.on_get(self.gets)
        self.gets += 1
        if name not in self.jobs:
            raise api_error(404, "NotFound")
        return copy.deepcopy(self.jobs[name])

    def list_namespaced_custom_object(self, group: str, version: str, namespace: str,
                                      plural: str, **kwargs: Any) -> Any:
        selector = kwargs.get("field_selector") or ""
        names = [selector.split("=", 1)[1]] if selector.startswith("metadata.name=") \
            else list(self.jobs)
        if kwargs.get("watch"):
            return self._watch(names, kwargs)
        return {"apiVersion": "lockstep.dev/v1alpha1", "kind": "TrainingJobList",
                "metadata": {"resourceVersion": str(next(self._version))},
                "items": [copy.deepcopy(self.jobs[n]) for n in names if n in self.jobs]}

    def _watch(self, names: list[str], kwargs: JsonDict) -> FakeStream:
        self.watch_calls.append(dict(kwargs))
        if self.watch_error is not None:
            error, self.watch_error = self.watch_error, None
            raise error
        lines = []
        while self.watch_updates:
            etype, name, status = self.watch_updates.pop(0)
            if name not in names:
                continue
            if etype == "DELETED":
                obj = self.jobs.pop(name)
            else:
                obj = self.put(name, status)
            lines.append(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
        return FakeStream(lines)

    def delete_namespaced_custom_object(self, group: str, version: str, namespace: str,
                                        plural: str, name: str, **kwargs: Any) -> JsonDict:
        if name not in self.jobs:
            raise api_error(404, "NotFound")
        self.deleted.append(name)
        self.delete_options = kwargs.get("body")
        return self.jobs.pop(name)


def pod(job: str, role: str, index: int, rank: int | None, attempt: int, *,
        state: str = "running", node: str | None = "node-a", exit_code: int = 0,
        termination: JsonDict | None = None, waiting_reason: str = "ContainerCreating",
        spare: bool = False) -> k8s.V1Pod:
    """A pod as the operator makes them (labels, trainer env) in the client's own model."""
    env = [k8s.V1EnvVar(name="LOCKSTEP_JOB_NAME", value=job)]
    if spare:
        env.append(k8s.V1EnvVar(name="LOCKSTEP_SPARE", value="1"))
    elif rank is not None:
        env.append(k8s.V1EnvVar(name="LOCKSTEP_NODE_RANK", value=str(rank)))
    if state == "running":
        cstate = k8s.V1ContainerState(running=k8s.V1ContainerStateRunning())
    elif state == "terminated":
        cstate = k8s.V1ContainerState(terminated=k8s.V1ContainerStateTerminated(
            exit_code=exit_code, reason="Completed" if exit_code == 0 else "Error",
            message=json.dumps(termination) if termination else None))
    else:
        cstate = k8s.V1ContainerState(waiting=k8s.V1ContainerStateWaiting(reason=waiting_reason))
    name = f"{job}-{role}-{index}"
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(
            name=name, namespace="ns", uid=f"{name}-a{attempt}",
            labels={"lockstep.dev/job-name": job, "lockstep.dev/role": role,
                    "lockstep.dev/replica-index": str(index),
                    "lockstep.dev/attempt": str(attempt)}),
        spec=k8s.V1PodSpec(node_name=node, containers=[
            k8s.V1Container(name="trainer", image="img", env=env),
            k8s.V1Container(name="sidecar", image="img")]),
        status=k8s.V1PodStatus(
            phase={"running": "Running", "terminated": "Succeeded" if exit_code == 0
                   else "Failed"}.get(state, "Pending"),
            container_statuses=[k8s.V1ContainerStatus(
                name="trainer", image="img", image_id="", ready=state == "running",
                restart_count=0, state=cstate)]))


class FakeCoreV1Api:
    """Pods and their trainer logs. `logs[(pod name, attempt)]` is the text a pod's log holds;
    a followed log streams it in two chunks (a line split across them) and ends."""

    def __init__(self) -> None:
        self.pods: list[k8s.V1Pod] = []
        self.logs: dict[str, str] = {}
        self.log_calls: list[JsonDict] = []
        # Pods deleted between a list and the read of their log (the operator stops the pods
        # still running when a success policy ends the job): their log read answers 404.
        self.deleted_before_log: set[str] = set()
        self.lock = threading.Lock()

    def set_pods(self, pods: list[k8s.V1Pod]) -> None:
        with self.lock:
            self.pods = list(pods)

    def list_namespaced_pod(self, namespace: str, label_selector: str = "",
                            **_: Any) -> k8s.V1PodList:
        key, _, value = label_selector.partition("=")
        with self.lock:
            items = [p for p in self.pods if (p.metadata.labels or {}).get(key) == value]
        return k8s.V1PodList(items=copy.deepcopy(items))

    def read_namespaced_pod_log(self, name: str, namespace: str, **kwargs: Any) -> Any:
        with self.lock:
            self.log_calls.append({"name": name, **kwargs})
            if name in self.deleted_before_log:
                self.pods = [p for p in self.pods if p.metadata.name != name]
            match = [p for p in self.pods if p.metadata.name == name]
        if not match:
            raise api_error(404, "NotFound")
        text = self.logs.get(match[0].metadata.uid, "")
        if kwargs.get("follow"):
            assert kwargs.get("_preload_content") is False
            data = text.encode()
            cut = len(data) // 2
            return FakeStream([data[:cut], data[cut:]])
        return text
