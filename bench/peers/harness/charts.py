"""PNG charts (matplotlib from the bench venv): the CDF of burst time-to-running per system, and
partial gangs over time under contention."""
import os
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def draw(res, out, also_to=""):
    files = []
    systems = res["systems"]
    if any("burst" in r for r in systems.values()):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for k, r in systems.items():
            ttr = r.get("burst", {}).get("ttr", [])
            if ttr:
                ax.step(ttr, [(i + 1) / r["burst"]["jobs"] for i in range(len(ttr))], where="post",
                        label=f"{k} (p50 {r['burst']['p50']:.1f} s)")
        for k, runs in res.get("ceiling", {}).items():
            ttr = runs[0]["ttr"]
            ax.step(ttr, [(i + 1) / len(ttr) for i in range(len(ttr))], where="post",
                    linestyle="--", label=f"{k} ceiling")
        ax.set_xlabel("job creation -> every pod Running (s)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title(f"Burst: {next(iter(systems.values()))['burst']['jobs']} jobs x 8 pods, "
                     f"{res['nodes']} kwok nodes")
        ax.grid(alpha=0.3)
        ax.legend()
        files.append(save(fig, out, "burst-cdf.png"))
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


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
