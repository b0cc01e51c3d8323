"""The API server's own count of the writes it served over a window (apiserver_request_total
from its /metrics), by resource and verb: what each system costs the shared API server per job,
which on this machine is what bounds every system's burst (bench/RESULTS.md)."""
import re

WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}
# Written at a fixed rate whatever runs (kwok's node heartbeats): reported apart, not per job.
BACKGROUND = {"leases", "nodes/status"}
_LINE = re.compile(r'^apiserver_request_total\{([^}]*)\} (\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse(text):
    """metrics text -> {(verb, resource[/subresource], code): count} for the write verbs."""
    counts = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(1)))
        verb = labels.get("verb", "")
        if verb not in WRITE_VERBS:
            continue
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        key = (verb, resource, labels.get("code", ""))
        counts[key] = counts.get(key, 0) + float(m.group(2))
    return counts


def snapshot(api):
    return parse(api.get_text("/metrics"))


def window(before, after, jobs):
    """The writes between two snapshots: totals, per job (heartbeats apart), and by kind."""
    by, background = {}, 0
    for key, n in after.items():
        d = int(round(n - before.get(key, 0)))
        if d <= 0:
            continue
        verb, resource, code = key
        if resource in BACKGROUND:
            background += d
            continue
        name = f"{verb} {resource}" + ("" if code.startswith("2") else f" ({code})")
        by[name] = by.get(name, 0) + d
    total = sum(by.values())
    return {"total": total, "jobs": jobs, "per_job": round(total / jobs, 1) if jobs else None,
            "heartbeats": background,
            "by": dict(sorted(by.items(), key=lambda kv: -kv[1]))}


def rows(res):
    """(name, window) of every system's burst and every ceiling run that has a census."""
    out = [(k, r["burst"]["writes"]) for k, r in res["systems"].items()
           if "writes" in r.get("burst", {})]
    out += [(f"{k} ceiling", runs[0]["writes"]) for k, runs in res.get("ceiling", {}).items()
            if runs and "writes" in runs[0]]
    return out
