"""bench/peers: Lockstep and its peers side by side, on one kwok cluster, in one invocation
(bench/peers/README.md). Run through bench/peers/run, which prepares the tools, the peers, the
release build and the bench venv first."""
import argparse
import json
import os
import platform
import sys
import time

from . import charts, report, runs, workload as wl
from .cluster import Cluster, log
from .systems.jobset_kueue import JobSetKueue
from .systems.kuberay import KubeRay
from .systems.lockstep import Lockstep, LockstepBound
from .systems.trainer import Trainer
from .systems.training_operator import TrainingOperator

ALL = ["L", "TO", "KU", "TR"]


def parse():
    p = argparse.ArgumentParser(prog="bench/peers/run")
    p.add_argument("--quick", action="store_true",
                   help="50 nodes, 20 burst jobs, one node loss per system (peers tuned), < 10 min")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=500, help="burst jobs (x 8 pods x 1 GPU)")
    p.add_argument("--contention-nodes", type=int, default=100)
    p.add_argument("--contention-jobs", type=int, default=50)
    p.add_argument("--finish-after", type=float, default=30.0)
    p.add_argument("--systems", default=",".join(ALL))
    p.add_argument("--workloads", default="burst,contention,nodeloss,ray")
    p.add_argument("--node-loss-cap", type=float, default=600.0)
    p.add_argument("--node-loss-reps", type=int, default=1,
                   help="repetitions of every system's node loss in each placement and "
                        "variant, the median the figure (and the range beside it)")
    p.add_argument("--node-loss-placements", default="packed,spread",
                   help="packed: the whole gang on the lost node (only the Lease can tell "
                        "any system); spread: one pod per node, a worker's node lost "
                        "(Lockstep's launchers on the other seven can report it); "
                        "spread-rank0: one pod per node, rank 0's node lost")
    p.add_argument("--node-loss-tuned-only", action="store_true",
                   help="the peers' node loss only with their tuning (their defaults wait out "
                        "the 300-s eviction); L runs with its defaults either way")
    p.add_argument("--ray-reps", type=int, default=3)
    p.add_argument("--cluster", default="i16-peers")
    p.add_argument("--keep-cluster", action="store_true")
    p.add_argument("--lockstep-build", required=True)
    p.add_argument("--lockstep-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a Helm value for L and LB (e.g. operator.qps=500); repeatable")
    p.add_argument("--lockstep-env", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable of L's and LB's operator process; repeatable")
    p.add_argument("--out", required=True)
    p.add_argument("--charts-dir", default="", help="also write the PNG charts here")
    a = p.parse_args()
    if a.quick:
        # Peers' node loss tuned only (their defaults take > 5 min), dead nodes not brought back.
        a.nodes, a.jobs, a.workloads, a.node_loss_cap = 50, 20, "burst,nodeloss", 75.0
        a.node_loss_tuned_only = True
    a.node_loss_placements = [x for x in a.node_loss_placements.split(",") if x]
    for x in a.node_loss_placements:
        wl.node_loss(a.nodes, x)  # an unknown placement stops the run before the cluster starts
    return a


def make(key, cluster, out, args, tuned=False):
    if key == "L":
        return Lockstep(cluster, out, args.lockstep_build, args.lockstep_set, args.lockstep_env)
    if key == "LB":  # L with --create-placed=false (issue 16's comparison)
        return LockstepBound(cluster, out, args.lockstep_build, args.lockstep_set,
                             args.lockstep_env)
    if key == "TO":
        return TrainingOperator(cluster, out)
    if key == "KU":
        return JobSetKueue(cluster, out, tuned_kueue=tuned)
    if key == "TR":
        return Trainer(cluster, out)
    if key == "KR":
        return KubeRay(cluster, out)
    raise SystemExit(f"unknown system {key}")


def load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def main():
    args = parse()
    os.makedirs(args.out, exist_ok=True)
    keys = [k for k in args.systems.split(",") if k]
    works = set(args.workloads.split(","))
    res = {"command": " ".join(["bench/peers/run"] + sys.argv[1:]),
           "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "machine": f"{os.cpu_count()} CPUs, {platform.node()}", "load": [],
           "nodes": args.nodes, "quick": args.quick, "systems": {}, "ceiling": {}, "titles": {}}
    cluster = Cluster(args.cluster, args.nodes, args.out)
    t_start = time.time()
    log(f"cluster {args.cluster}: {args.nodes} nodes")
    cluster.up()
    try:
        if "contention" in works:
            cluster.label_pool(wl.CONTENTION_POOL, args.contention_nodes)
        burst = wl.burst(args.nodes, args.jobs)
        timeout = max(300, args.jobs * 3)
        if "burst" in works:
            res["ceiling"]["RAW"] = [runs.ceiling(cluster, burst, False, timeout)]
            res["ceiling"]["RAW1"] = [runs.ceiling(cluster, burst, True, timeout)]
        for key in keys:
            res["load"].append((key, load()))
            res["systems"][key] = run_system(cluster, key, args, works, burst, timeout)
            res["titles"][key] = make(key, cluster, args.out, args).title
            save(res, args.out)
        if "burst" in works and not args.quick:
            res["ceiling"]["RAW"].append(runs.ceiling(cluster, burst, False, timeout))
        if "ray" in works:
            res["ray"] = run_ray(cluster, args)
            res["titles"]["KR"] = KubeRay.title
        res["load"].append(("end", load()))
        res["seconds"] = round(time.time() - t_start)
        save(res, args.out)
        charts.draw(res, args.out, args.charts_dir)
        with open(os.path.join(args.out, "tables.md"), "w") as f:
            f.write(f"`{res['command']}`, {res['started']}, load {res['load']}\n\n"
                    + report.tables(res) + "\n")
        print(report.lines(res))
    finally:
        if not args.keep_cluster:
            cluster.down()


def run_system(cluster, key, args, works, burst, timeout):
    out = {}
    system = make(key, cluster, args.out, args)
    log(f"== {key}: {system.title}")
    t = time.time()
    try:
        cluster.settle()
        system.install()
        out["install_s"] = round(time.time() - t, 1)
        if "burst" in works:
            out["burst"] = runs.burst(cluster, system, burst, timeout)
        if "contention" in works:
            cont = wl.contention(args.contention_nodes, args.contention_jobs, args.finish_after)
            out["contention"] = runs.contention(cluster, system, cont, stall_timeout=120,
                                                hard_timeout=1800)
        if "nodeloss" in works:
            out["nodeloss"] = node_losses(cluster, key, system, args, tuned_install=False)
    finally:
        system.uninstall()
    if "nodeloss" in works and key == "KU" and not args.quick:
        # Kueue's tuning is in its Configuration (recoveryTimeout): a second install.
        system = make(key, cluster, args.out, args, tuned=True)
        try:
            system.install()
            for placement, got in node_losses(cluster, key, system, args,
                                              tuned_install=True).items():
                out["nodeloss"][placement].update(got)
        finally:
            system.uninstall()
    out["tuned_note"] = system.tuned_note
    return out


def node_losses(cluster, key, system, args, tuned_install):
    """Workload 3 for one system, every placement asked for: placement -> variant -> figures.
    Variants: "default" (L: its launchers run, as in every Lockstep pod), "lease" (L in the
    spread placement without launchers: what the Lease grace alone does; in the packed one the
    launchers all die with the node, so "default" is that already), "tuned" (each peer with the
    tuning its docs offer; KU's on its second, tuned install)."""
    out = {}
    reps, cap, restore = args.node_loss_reps, args.node_loss_cap, not args.quick
    for placement in args.node_loss_placements:
        loss = wl.node_loss(args.nodes, placement)
        got = out[placement] = {}
        if not tuned_install and (key in ("L", "LB") or not args.node_loss_tuned_only):
            got["default"] = runs.node_loss_reps(reps, cluster, system, loss, False, cap, restore)
        if key in ("L", "LB") and not args.quick and placement != "packed":
            got["lease"] = runs.node_loss_reps(reps, cluster, system, loss, False, cap, restore,
                                               launchers=False)
        if key not in ("L", "LB") and (tuned_install or key != "KU" or args.quick):
            got["tuned"] = runs.node_loss_reps(reps, cluster, system, loss, True, cap, restore)
    return out


def run_ray(cluster, args):
    """5: Lockstep and KubeRay installed together (their pods never meet: Lockstep binds its
    own, kube-scheduler the rest), alternating repetitions."""
    systems = [make("L", cluster, args.out, args), make("KR", cluster, args.out, args)]
    times = {s.key: [] for s in systems}
    try:
        for s in systems:
            s.install()
        for _ in range(args.ray_reps):
            for s in systems:
                times[s.key].append(runs.ray_cluster(cluster, s, wl.ray(args.nodes), 300))
                log(f"{s.key} ray: {runs.fmt(times[s.key][-1])} s")
    finally:
        for s in systems:
            s.uninstall()
    return times


def save(res, out):
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
