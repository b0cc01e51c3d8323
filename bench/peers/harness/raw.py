"""The apiserver's ceiling, measured in the same run: pods created and bound by the harness itself
(two writes per pod, as every scheduler's binding path needs), and pods created already bound
(spec.nodeName at create: one write), 64 in flight over 4 processes, the same pod template and
groups of 8 as burst's jobs. Every job counts as submitted when the phase starts."""
import multiprocessing as mp
import threading
import time

from . import kube as kubelib
from .systems import base

LABEL = "bench.lockstep.dev/job"


def _worker(kubeconfig, ns, nodes, jobs, pods, gpus, one_write, first, step, threads, ready, go):
    api = kubelib.Kube(kubeconfig)
    todo = list(range(first, jobs * pods, step))
    ready.put(1)
    go.wait()
    lock = threading.Lock()

    def run():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
            job, name = f"raw-{i // pods:04d}", f"raw-{i:05d}"
            node = nodes[i % len(nodes)]
            spec = {"containers": [{"name": "trainer", "image": "bench/trainer:1",
                                    "command": ["python", "train.py"],
                                    "resources": base.resources(gpus)}],
                    "schedulerName": "bench-raw"}
            if one_write:
                spec["nodeName"] = node
            api.create(kubelib.pods_path(ns), {"apiVersion": "v1", "kind": "Pod",
                                               "metadata": {"name": name, "labels": {LABEL: job}},
                                               "spec": spec})
            if not one_write:
                api.create(f"{kubelib.pods_path(ns)}/{name}/binding",
                           {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                            "target": {"kind": "Node", "name": node}})

    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def create_and_bind(kubeconfig, ns, nodes, jobs, pods, gpus, one_write, procs=4, inflight=64):
    """Returns the time the writers were released (the phase's submission time)."""
    ctx = mp.get_context("spawn")  # the parent has watch threads: no fork
    ready, go = ctx.Queue(), ctx.Event()
    ps = [ctx.Process(target=_worker, args=(kubeconfig, ns, nodes, jobs, pods, gpus, one_write,
                                            k, procs, inflight // procs, ready, go))
          for k in range(procs)]
    for p in ps:
        p.start()
    for _ in ps:
        ready.get(timeout=120)
    t0 = time.time()
    go.set()
    return t0, ps


def join(ps):
    for p in ps:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"raw create worker exited {p.exitcode}")


def job_of(pod):
    return pod["metadata"].get("labels", {}).get(LABEL)
