"""PNG charts (matplotlib from the bench venv): the CDF of burst time-to-running per system, and
partial gangs over time under contention."""
import json
import os
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import census  # noqa: E402


def cdf(ax, ttr, jobs, **style):
    """Steps up by 1/jobs at each time-to-running; jobs never running keep the curve below 1."""
    return ax.step(ttr, [(i + 1) / jobs for i in range(len(ttr))], where="post", **style)[0]


def burst_axes(ax, jobs, nodes, xlabel="job creation -> every pod Running (s)"):
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"Burst: {jobs} jobs x 8 pods, {nodes} kwok nodes")
    ax.grid(alpha=0.3)


def draw(res, out, also_to=""):
    files = []
    systems = res["systems"]
    if any("burst" in r for r in systems.values()):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for k, r in systems.items():
            ttr = r.get("burst", {}).get("ttr", [])
            if ttr:
                cdf(ax, ttr, r["burst"]["jobs"], label=f"{k} (p50 {r['burst']['p50']:.1f} s)")
        for k, runs in res.get("ceiling", {}).items():
            ttr = runs[0]["ttr"]
            cdf(ax, ttr, len(ttr), linestyle="--", label=f"{k} ceiling")
        burst_axes(ax, next(iter(systems.values()))["burst"]["jobs"], res["nodes"])
        ax.legend()
        files.append(save(fig, out, "burst-cdf.png"))
    if any("writes" in r.get("burst", {}) for r in systems.values()):
        files.append(writes_chart(res, out))
    if any("contention" in r for r in systems.values()):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for k, r in systems.items():
            series = r.get("contention", {}).get("series", [])
            if series:
                ax.plot([s[0] for s in series], [s[1] for s in series], label=k)
        ax.set_xlabel("time since submission (s)")
        ax.set_ylabel("partial gangs (some pods bound, not all)")
        ax.set_title("Contention: demand 2x capacity")
        ax.grid(alpha=0.3)
        ax.legend()
        files.append(save(fig, out, "contention-partial.png"))
    if also_to:
        os.makedirs(also_to, exist_ok=True)
        for f in files:
            shutil.copy(f, also_to)
    return files


# What each API write is for, so the bars read as the cost of a feature, not a list of resources.
WRITE_GROUPS = [
    ("pod creates", ("POST pods",)),
    ("binds", ("POST pods/binding",)),
    ("pod status (kwok, the kubelet's part)", ("PATCH pods/status", "PUT pods/status")),
    # The cluster's endpoint controllers for a Service with a selector; L's own slice since it
    # writes it (operator/api/endpoint_slice.h).
    ("Service endpoints", ("endpoints", "endpointslices")),
    ("pod deletes (undone gangs, restarts)", ("DELETE pods",)),
    ("events", ("events",)),
]
OWN_WRITES = "the system's own objects and status"


def write_group(kind):
    verb_resource = kind.split(" (")[0]
    for name, keys in WRITE_GROUPS:
        if verb_resource in keys or verb_resource.split(" ")[-1] in keys:
            return name
    return OWN_WRITES


def writes_chart(res, out):
    """Stacked bars: the API server's writes per job over each burst window, by purpose."""
    rows = census.rows(res)
    groups = [g for g, _ in WRITE_GROUPS] + [OWN_WRITES]
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(rows) + 2.2))
    left = [0.0] * len(rows)
    for g in groups:
        widths = [sum(n for kind, n in w["by"].items() if write_group(kind) == g) / w["jobs"]
                  for _, w in rows]
        ax.barh([name for name, _ in rows], widths, left=left, label=g)
        left = [a + b for a, b in zip(left, widths)]
    for i, (_, w) in enumerate(rows):
        ax.text(left[i] + 0.5, i, f"{w['per_job']}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("API server writes per job during the burst (node heartbeats apart)")
    ax.set_title("What each system asks of the shared API server")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=7, loc="lower right")
    return save(fig, out, "burst-writes.png")


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compare(runs, system, out, name):
    """One system's burst CDF from several invocations (`runs`: (label, results.json path)), each
    with its own RAW1 ceiling dashed in the same colour: how a change moved the system against
    the ceiling measured beside it."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, path in runs:
        with open(path) as f:
            res = json.load(f)
        burst = res["systems"][system]["burst"]
        line = cdf(ax, burst["ttr"], burst["jobs"],
                   label=f"{system} {label} (p50 {burst['p50']:.1f} s)")
        ceiling = res.get("ceiling", {}).get("RAW1", [])
        if ceiling:
            c = ceiling[0]["ttr"]
            cdf(ax, c, len(c), linestyle="--", color=line.get_color(), alpha=0.5)
    burst_axes(ax, burst["jobs"], res["nodes"],
               "job creation -> every pod Running (s); dashed: RAW1 of the same invocation")
    ax.legend(fontsize=8, loc="lower right")
    return save(fig, out, name)


if __name__ == "__main__":
    # python -m harness.charts OUT_DIR NAME SYSTEM LABEL=results.json ...
    import sys
    pairs = [a.split("=", 1) for a in sys.argv[4:]]
    print(compare(pairs, sys.argv[3], sys.argv[1], sys.argv[2]))
