"""A TrainingJob's pods by rank, and what each rank is doing (pure; objects as JSON dicts).

"Rank" here is the pod's node rank (LOCKSTEP_NODE_RANK, docs/api.md "Node ranks"): a pod runs
procsPerPod processes, and its log holds all of them. A hot spare standing by has no rank; a
promoted spare has the rank it serves (status.spares.serving).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from lockstep import _api

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class LogLine:
    """One line of one rank's log; str() gives it as `logs` prints it."""

    rank: int | None
    pod: str
    attempt: int
    text: str

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.pod

    def __str__(self) -> str:
        return f"[{self.label}] {self.text}"


@dataclass(frozen=True)
class RankStatus:
    """One row of `kubectl lockstep status`."""

    rank: int | None
    pod: str
    node: str
    attempt: int
    state: str
    restarts: int
    progress: str
    why: str


def _env(pod: JsonDict, name: str) -> str | None:
    containers = (pod.get("spec") or {}).get("containers") or []
    for var in (containers[0].get("env") or []) if containers else []:
        if var.get("name") == name:
            return str(var.get("value", ""))
    return None


def pod_attempt(pod: JsonDict) -> int:
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(_api.LABEL_ATTEMPT, "0")
    return int(value) if str(value).isdigit() else 0


def pod_rank(pod: JsonDict, job: JsonDict | None = None) -> int | None:
    """The node rank the pod runs as; None for a spare that serves none."""
    rank = _env(pod, _api.ENV_NODE_RANK)
    if rank is not None and rank.isdigit():
        return int(rank)
    name = (pod.get("metadata") or {}).get("name")
    serving = (((job or {}).get("status") or {}).get("spares") or {}).get("serving") or []
    for entry in serving:
        if entry.get("pod") == name and entry.get("nodeRank") is not None:
            return int(entry["nodeRank"])
    return None


def current_attempt(job: JsonDict) -> int:
    return int((job.get("status") or {}).get("attempt") or 0)


def pods_of_attempt(pods: Iterable[JsonDict], attempt: int) -> list[JsonDict]:
    return [p for p in pods if pod_attempt(p) == attempt]


def by_rank(pods: Iterable[JsonDict], job: JsonDict) -> list[tuple[int | None, JsonDict]]:
    """(rank, pod), ranked pods first in rank order, then spares by name."""
    ranked = [(pod_rank(p, job), p) for p in pods]
    return sorted(ranked, key=lambda rp: (rp[0] is None, rp[0] or 0,
                                          (rp[1].get("metadata") or {}).get("name", "")))


def trainer_status(pod: JsonDict) -> JsonDict | None:
    """The first container's status (the trainer, under the launcher)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    name = containers[0].get("name") if containers else None
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == name:
            return dict(status)
    return None


def trainer_started(pod: JsonDict) -> bool:
    """Whether the trainer has a log to read: it runs or ran."""
    status = trainer_status(pod) or {}
    state = status.get("state") or {}
    return state.get("running") is not None or state.get("terminated") is not None


def termination(pod: JsonDict) -> JsonDict | None:
    """The launcher's termination message (protocol/termination.h), when the trainer ended."""
    terminated = ((trainer_status(pod) or {}).get("state") or {}).get("terminated") or {}
    message = terminated.get("message")
    if not message:
        return None
    try:
        decoded = json.loads(message)
    except ValueError:
        return {"message": message}
    return decoded if isinstance(decoded, dict) else {"message": message}


def _progress_text(step: Any, total: Any, percent: Any = None) -> str:
    if step is None:
        return "-"
    text = f"step {step}" + (f"/{total}" if total else "")
    return text + (f" ({percent}%)" if percent is not None else "")


def _state(pod: JsonDict) -> str:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    status = trainer_status(pod) or {}
    state = status.get("state") or {}
    if state.get("terminated") is not None:
        code = state["terminated"].get("exitCode")
        return "Succeeded" if code == 0 else f"Failed (exit {code})"
    if state.get("running") is not None:
        return "Running"
    if state.get("waiting") is not None:
        return f"Waiting ({state['waiting'].get('reason', '')})"
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _condition(obj: JsonDict, ctype: str) -> JsonDict | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def _why(pod: JsonDict, job: JsonDict) -> str:
    """Why the rank waits or failed, in the words of whoever knows: the launcher's termination
    message, the container's waiting reason, the gang scheduler's Scheduled condition."""
    ended = termination(pod)
    terminated = ((trainer_status(pod) or {}).get("state") or {}).get("terminated") or {}
    if terminated and terminated.get("exitCode") != 0:
        if ended:
            parts = [str(ended.get(k)) for k in ("reason", "message") if ended.get(k)]
            tail = ended.get("stderrTail")
            if isinstance(tail, list) and tail:
                parts.append(f"last stderr: {tail[-1]}")
            elif isinstance(tail, str) and tail.strip():
                parts.append(f"last stderr: {tail.strip().splitlines()[-1]}")
            return "; ".join(parts)
        return str(terminated.get("reason") or "")
    waiting = (((trainer_status(pod) or {}).get("state") or {}).get("waiting")) or {}
    if waiting.get("message") or waiting.get("reason") not in (None, "ContainerCreating",
                                                               "PodInitializing"):
        return ": ".join(str(waiting[k]) for k in ("reason", "message") if waiting.get(k))
    if not (pod.get("spec") or {}).get("nodeName"):
        scheduled = _condition(job, "Scheduled")
        if scheduled and scheduled.get("status") == "False":
            return str(scheduled.get("message") or scheduled.get("reason") or "")
        pod_sched = _condition(pod, "PodScheduled")
        if pod_sched and pod_sched.get("message"):
            return str(pod_sched["message"])
        return "waiting for the gang scheduler"
    return ""


def rank_statuses(job: JsonDict, pods: Iterable[JsonDict]) -> list[RankStatus]:
    """One row per pod of the job's current attempt, in rank order."""
    status = job.get("status") or {}
    restarts = int((status.get("restarts") or {}).get("total") or 0)
    progress = status.get("progress") or {}
    rows = []
    for rank, pod in by_rank(pods_of_attempt(pods, current_attempt(job)), job):
        ended = termination(pod) or {}
        final = ended.get("progress") if isinstance(ended.get("progress"), dict) else None
        if final:
            text = _progress_text(final.get("step"), final.get("totalSteps"))
        elif rank == 0:
            text = _progress_text(progress.get("step"), progress.get("totalSteps"),
                                  progress.get("percent"))
        else:
            text = "-"  # only node 0's launcher reports progress while the gang runs
        rows.append(RankStatus(
            rank=rank, pod=str((pod.get("metadata") or {}).get("name", "")),
            node=str((pod.get("spec") or {}).get("nodeName") or "-"), attempt=pod_attempt(pod),
            state=_state(pod), restarts=restarts, progress=text, why=_why(pod, job)))
    return rows


def format_status(job: JsonDict, rows: list[RankStatus]) -> str:
    """`kubectl lockstep status`'s text: the job's line, then a table of ranks."""
    meta = job.get("metadata") or {}
    status = job.get("status") or {}
    head = (f"{meta.get('namespace', '')}/{meta.get('name', '')}: "
            f"{status.get('state') or 'Pending'}")
    if status.get("reason"):
        head += f" ({status['reason']})"
    head += f", attempt {status.get('attempt') or 0}"
    head += f", workers ready {status.get('workersReady') or '-'}"
    lines = [head]
    if status.get("message"):
        lines.append(f"  {status['message']}")
    last = status.get("lastRestart") or {}
    if last:
        lines.append(f"  last restart: {last.get('reason', '')} ({last.get('mode', '')}) "
                     f"{last.get('message', '')}".rstrip())
    table = [("RANK", "POD", "NODE", "ATTEMPT", "STATE", "RESTARTS", "PROGRESS", "WHY")]
    for row in rows:
        table.append((str(row.rank) if row.rank is not None else "spare", row.pod, row.node,
                      str(row.attempt), row.state, str(row.restarts), row.progress, row.why))
    if len(table) == 1:
        lines.append("  no pods in the current attempt")
    else:
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
        for r in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    return "\n".join(line.rstrip() for line in lines)
