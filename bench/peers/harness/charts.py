"""PNG charts (matplotlib from the bench venv), one per workload: the CDF of burst time-to-running
per system, the API writes behind it, partial gangs over time under contention, node-loss recovery
(defaults and tuned) per system, each controller's peak RSS and CPU-seconds over the burst, and the
Ray cluster's time to Running per repetition."""
import json
import os
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import census  # noqa: E402
from . import report  # noqa: E402
from .runs import median  # noqa: E402


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
    if any(report.has_nodeloss(r) for r in systems.values()):
        files.append(nodeloss_chart(res, out))
    if any(r.get("burst", {}).get("cost") for r in systems.values()):
        files.append(cost_chart(res, out))
    if res.get("ray"):
        files.append(ray_chart(res, out))
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


def nodeloss_chart(res, out):
    """Grouped bars, log scale: last heartbeat -> the job Running again off the lost node, each
    system with its defaults and tuned. A run that hit the cap is drawn at the cap, hatched."""
    rows = []
    for k, r in res["systems"].items():
        for placement, label, n in report.nodeloss_variants(r, long=False):
            got = n["recovery_s"]
            rows.append((f"{k} {label} ({placement})", got if got is not None else n["cap_s"],
                         got is None))
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.8))
    names = [n for n, _, _ in rows]
    bars = ax.barh(names, [v for _, v, _ in rows],
                   color=["tab:green" if n.startswith("L ") else "tab:gray" for n in names])
    for bar, (_, v, capped) in zip(bars, rows):
        if capped:
            bar.set_hatch("//")
        ax.text(v * 1.05, bar.get_y() + bar.get_height() / 2,
                (f"> {v:.0f} s (cap)" if capped else f"{v:.1f} s"), va="center", fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("last heartbeat of the lost node -> every pod Running again off it (s, log)")
    ax.set_title("Node loss: a job of 8 pods, the node of one goes silent\n"
                 "(packed: all 8 on that node; spread: one pod per node)")
    ax.grid(alpha=0.3, axis="x")
    return save(fig, out, "nodeloss.png")


def cost_chart(res, out):
    """Per controller process over the burst window: peak RSS (left) and CPU-seconds (right)."""
    rows = [(f"{k}: {n}", c) for k, r in res["systems"].items()
            for n, c in r.get("burst", {}).get("cost", {}).items()]
    fig, (rss, cpu) = plt.subplots(1, 2, figsize=(9, 0.4 * len(rows) + 1.8), sharey=True)
    names = [n for n, _ in rows]
    colours = ["tab:green" if n.startswith("L:") else "tab:gray" for n in names]
    for ax, key, label in ((rss, "peak_rss_mb", "peak RSS (MB)"), (cpu, "cpu_s", "CPU-seconds")):
        values = [c.get(key) or 0 for _, c in rows]
        ax.barh(names, values, color=colours)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:g}", va="center", fontsize=7)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3, axis="x")
    rss.invert_yaxis()
    jobs = next((r["burst"]["jobs"] for r in res["systems"].values() if "burst" in r), "?")
    fig.suptitle(f"Cost over the burst ({jobs} jobs x 8 pods, {res['nodes']} nodes), per process")
    return save(fig, out, "cost.png")


def ray_chart(res, out):
    """Every repetition as a dot and the median as a bar: creation -> head and workers Running."""
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(res["ray"]) + 1.6))
    names = list(res["ray"])
    for i, k in enumerate(names):
        reps = [v for v in res["ray"][k] if v is not None]
        if not reps:
            continue
        mid = median(reps)
        ax.barh(i, mid, color="tab:green" if k == "L" else "tab:gray", alpha=0.5)
        ax.plot(reps, [i] * len(reps), "k.", alpha=0.7)
        ax.text(max(reps) * 1.02, i, f"median {mid:.2f} s", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("creation -> head + 7 workers Running (s); dots: repetitions")
    ax.set_title("Ray: a 1 head + 7 worker cluster")
    ax.grid(alpha=0.3, axis="x")
    return save(fig, out, "ray.png")


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
