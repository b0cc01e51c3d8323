"""One function per workload: runs it through one system on the cluster and returns its figures
(plain dicts, written to results.json and rendered by report.py)."""
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from . import census
from . import cost as costlib
from . import kube as kubelib
from . import raw as rawlib
from . import workload as wl
from .cluster import log
from .tracker import Tracker

_ns_counter = [0]


def new_namespace(cluster, system_key, workload):
    _ns_counter[0] += 1
    ns = f"bench-{system_key.lower()}-{workload.key}-{_ns_counter[0]}"
    cluster.create_namespace(ns)
    return ns


def pct(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))]


def summarize(ttr, submitted, all_running_at):
    return {"p50": pct(ttr, 0.5), "p95": pct(ttr, 0.95), "max": max(ttr) if ttr else None,
            "all_running_s": (all_running_at - submitted) if all_running_at else None,
            "jobs_running": len(ttr), "ttr": sorted(ttr)}


def create_jobs(cluster, system, workload, ns, tuned=False):
    """Creates every job at once (16 writers); returns job -> time its create was sent."""
    gv, plural = system.collection()
    path = f"/apis/{gv}/namespaces/{ns}/{plural}"
    sent = {}

    def create(i):
        job = workload.job(i)
        obj = system.render(job, ns, tuned)
        sent[job.name] = time.time()
        cluster.api.create(path, obj)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(workload.jobs)))
    return sent


def burst(cluster, system, workload, timeout):
    """1 (and 4): every job created at once; per-job creation -> every pod Running; with the
    system's processes' CPU-seconds and peak RSS over the window."""
    cluster.settle()
    ns = new_namespace(cluster, system.key, workload)
    system.prepare_namespace(ns, workload)
    tracker = Tracker(cluster.api, ns, system.job_of, workload.pods)
    tracker.start()
    sampler = costlib.CostSampler(system.pids())
    writes_before = census.snapshot(cluster.api)
    t0 = time.time()
    sent = create_jobs(cluster, system, workload, ns)
    done = tracker.wait_all_running(list(sent), timeout)
    writes = census.window(writes_before, census.snapshot(cluster.api), workload.jobs)
    cost = sampler.finish()
    tracker.close()
    system.evidence(f"burst-{workload.jobs}")
    ttr = [tracker.all_running[j] - sent[j] for j in sent if j in tracker.all_running]
    out = summarize(ttr, t0, done)
    out.update(cost=cost, cost_series=sampler.series, jobs=workload.jobs, writes=writes)
    log(f"{system.key} burst: p50 {fmt(out['p50'])} p95 {fmt(out['p95'])} max {fmt(out['max'])}"
        f" all {fmt(out['all_running_s'])} ({len(ttr)}/{workload.jobs} jobs running),"
        f" {writes['per_job']} API writes per job")
    cluster.delete_namespace(ns)
    return out


def ceiling(cluster, workload, one_write, timeout):
    """The raw create(+bind) ceiling over burst's pods."""
    cluster.settle()
    key = "RAW1" if one_write else "RAW"
    ns = new_namespace(cluster, key, workload)
    tracker = Tracker(cluster.api, ns, rawlib.job_of, workload.pods)
    tracker.start()
    nodes = cluster.node_names()
    writes_before = census.snapshot(cluster.api)
    t0, procs = rawlib.create_and_bind(cluster.kubeconfig, ns, nodes, workload.jobs,
                                       workload.pods, workload.gpus, one_write)
    rawlib.join(procs)
    jobs = [f"raw-{j:04d}" for j in range(workload.jobs)]
    done = tracker.wait_all_running(jobs, timeout)
    writes = census.window(writes_before, census.snapshot(cluster.api), workload.jobs)
    tracker.close()
    ttr = [tracker.all_running[j] - t0 for j in jobs if j in tracker.all_running]
    out = summarize(ttr, t0, done)
    out["writes"] = writes
    out["pods_per_s"] = workload.jobs * workload.pods / out["all_running_s"] if done else None
    log(f"{key} ceiling: p50 {fmt(out['p50'])} all {fmt(out['all_running_s'])}"
        f" ({fmt(out['pods_per_s'])} pods/s)")
    cluster.delete_namespace(ns)
    return out


def contention(cluster, system, workload, stall_timeout, hard_timeout):
    """2: demand 2x capacity; a job finishes `finish_after` s after all its pods run (the harness
    marks its pods Succeeded, as a kubelet would). Samples every 0.5 s: partial gangs (some pods
    bound, not all) and the GPU-seconds they hold."""
    cluster.settle()
    ns = new_namespace(cluster, system.key, workload)
    system.prepare_namespace(ns, workload)
    tracker = Tracker(cluster.api, ns, system.job_of, workload.pods)
    tracker.start()
    t0 = time.time()
    sent = create_jobs(cluster, system, workload, ns)
    finished, series = {}, []
    partial_gpu_s, peak_partial, last_progress = 0.0, 0, time.time()
    last = time.time()
    finisher = ThreadPoolExecutor(8)
    while len(finished) < len(sent):
        time.sleep(0.5)
        now = time.time()
        with tracker.lock:
            bound = tracker.bound()
            ready = {j: t for j, t in tracker.all_running.items()}
        partial = {j: n for j, n in bound.items() if 0 < n < workload.pods and j not in finished}
        partial_gpu_s += sum(partial.values()) * workload.gpus * (now - last)
        peak_partial = max(peak_partial, len(partial))
        last = now
        for j, t in ready.items():
            if j not in finished and now - t >= workload.finish_after:
                finished[j] = now
                with tracker.lock:
                    tracker.retire(j, time.time())
                finisher.submit(finish_job, cluster, tracker, ns, j)
                last_progress = now
        series.append((now - t0, len(partial), sum(1 for j in ready if j not in finished),
                       len(finished)))
        if now - last_progress > stall_timeout or now - t0 > hard_timeout:
            break
    finisher.shutdown(wait=True)
    tracker.close()
    out = {"makespan_s": (max(finished.values()) - t0) if len(finished) == len(sent) else None,
           "finished": len(finished), "deadlocked": len(sent) - len(finished),
           "partial_gpu_s": round(partial_gpu_s, 1), "peak_partial": peak_partial,
           "series": series, "jobs": workload.jobs}
    out.update(partial_events(tracker, workload.gpus))
    log(f"{system.key} contention: makespan {fmt(out['makespan_s'])} finished {len(finished)}/"
        f"{len(sent)} partial GPU-s {out['partial_gpu_s']} peak partial {peak_partial}; by events:"
        f" {out['partial_gpu_s_events']} GPU-s in {out['partial_spans']} spans, p50"
        f" {fmt(out['partial_span_p50_s'])} s, max {fmt(out['partial_span_max_s'])} s")
    cluster.delete_namespace(ns)
    return out


def partial_events(tracker, gpus):
    """The partial gangs as the watch events time them (the sampler above sees only the 0.5-s
    instants): GPU-seconds held by partly bound gangs, and how long each partial span lasted. A
    span still open at the end (a gang that never completed) counts up to now."""
    with tracker.lock:
        now = time.time()
        for job in list(tracker.partial_since):
            tracker.retire(job, now)
        spans = sorted(tracker.partial_spans)
        pod_s = tracker.partial_pod_s
    return {"partial_gpu_s_events": round(pod_s * gpus, 1), "partial_spans": len(spans),
            "partial_span_p50_s": pct(spans, 0.5), "partial_span_max_s": spans[-1] if spans else None}


def finish_job(cluster, tracker, ns, job):
    """Marks the job's running pods Succeeded with exit code 0 (what a kubelet reports)."""
    pods, _ = cluster.api.list(kubelib.pods_path(ns))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for p in pods:
        if tracker.job_of(p) != job or p["status"].get("phase") != "Running":
            continue
        statuses = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": False,
                     "restartCount": 0, "started": False,
                     "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                              "startedAt": stamp, "finishedAt": stamp}}}
                    for c in p["spec"]["containers"]]
        try:
            cluster.api.merge_patch(f"{kubelib.pods_path(ns)}/{p['metadata']['name']}/status",
                                    {"status": {"phase": "Succeeded", "containerStatuses": statuses}})
        except kubelib.ApiError as e:
            log(f"finishing {p['metadata']['name']}: {e}")


_packed_runs = [0]


def node_loss(cluster, system, workload, tuned, timeout, restore=True, launchers=True):
    """3: one job running, placed as workload.placement says (workload.node_loss); the node of
    one of its pods stops heartbeating. Last Lease renewal -> every pod of the job Running again,
    none on that node (pods being deleted do not count). With launchers, the system's in-pod
    processes (system.launchers: Lockstep's) run for the job, and every one of them on the lost
    node freezes the moment its Lease stops."""
    cluster.settle()
    pool_nodes = None
    if workload.placement == "packed":
        # The pool is one node while the job is placed (each run the next of the list's last
        # NODE_LOSS_POOL_NODES, so a node lost in the run before is not reused at once), then
        # all of them, so that the gang has somewhere to go when its node is lost.
        pool_nodes = cluster.node_names()[-wl.NODE_LOSS_POOL_NODES:]
        first = pool_nodes[_packed_runs[0] % len(pool_nodes)]
        _packed_runs[0] += 1
        cluster.set_pool(workload.pool, [first])
    ns = new_namespace(cluster, system.key, workload)
    system.prepare_namespace(ns, workload)
    tracker = Tracker(cluster.api, ns, system.job_of, workload.pods)
    tracker.start()
    sent = create_jobs(cluster, system, workload, ns, tuned=tuned)
    job = next(iter(sent))
    if tracker.wait_all_running([job], 180) is None:
        tracker.close()
        cluster.delete_namespace(ns)
        return {"error": "job never ran", "placement": workload.placement}
    if pool_nodes:
        cluster.set_pool(workload.pool, pool_nodes)
    gang, gang_error = None, None
    if launchers:
        try:
            gang = system.launchers(ns, job)
        except RuntimeError as e:  # measured without them, and said so in the results
            gang_error = str(e)
            log(f"{system.key} node loss without launchers: {e}")
    time.sleep(3)
    with tracker.lock:
        placed = [n for (j, n, ph, d) in tracker.pods.values() if j == job and n and not d]
    lost_pod, node = lost_member(cluster, system, ns, job, workload.lose)
    stopped = time.time()
    cluster.stop_heartbeat(node)
    frozen = gang.freeze(node) if gang else None
    log(f"{system.key} node loss ({workload.placement}, {'tuned' if tuned else 'default'}): "
        f"stopped {node}, {placed.count(node)} of the job's {len(placed)} pods on it"
        + (f", launchers of ranks {frozen} frozen" if gang else ""))

    def recovered(t):
        live = t.live(job)
        return (len(live) >= workload.pods and t.running(job, avoid_node=node) >= workload.pods)

    at = tracker.wait(recovered, timeout)
    tracker.close()
    last_renewal = cluster.last_renewal(node)
    if gang:
        gang.close()
    # From the last renewal (the figure: a real node dies somewhere in its renewal interval, and
    # a Lease-driven peer counts from there) and from the moment the harness killed the node.
    out = {"node": node, "recovery_s": (at - last_renewal) if at else None,
           "from_stop_s": (at - stopped) if at else None, "cap_s": timeout,
           "tuned": tuned, "launchers": gang is not None, "placement": workload.placement,
           "job_nodes": len(set(placed)), "pods_on_lost_node": placed.count(node),
           "lost_pod": lost_pod}
    if gang:
        out["frozen_ranks"] = frozen
    if gang_error:
        out["launchers_error"] = gang_error
    if at is None:
        with tracker.lock:
            out["left"] = [{"node": n, "phase": ph, "deleting": d}
                           for (j, n, ph, d) in tracker.pods.values() if j == job]
    log(f"{system.key} node loss ({workload.placement}): {fmt(out['recovery_s'])} s from the "
        f"last heartbeat, {fmt(out['from_stop_s'])} s from the kill (cap {timeout} s"
        f"{', its launchers ran' if gang else ''})")
    cluster.resume_heartbeat(node, wait=restore)
    cluster.delete_namespace(ns)
    return out


def lost_member(cluster, system, ns, job, which):
    """(pod, its node): the job's bound pod whose name sorts first ("first") or last ("last").
    Every system names rank 0 first (Lockstep's worker-0, which hosts the rendezvous and which
    the operator asks about its peers; training-operator's master-0; JobSet's job index 0), so
    "last" is a plain worker and "first" the gang's rank 0."""
    items, _ = cluster.api.list(kubelib.pods_path(ns))
    pods = sorted((p["metadata"]["name"], p["spec"]["nodeName"]) for p in items
                  if system.job_of(p) == job and p["spec"].get("nodeName")
                  and not p["metadata"].get("deletionTimestamp"))
    return pods[0] if which == "first" else pods[-1]


def node_loss_reps(reps, *args, **kwargs):
    """node_loss `reps` times; the first run's figures with `recovery_s` and `from_stop_s` the
    medians of every run's (None when any did not recover), each run's in `reps` and
    `from_stop_reps`, and every run's own record in `runs`."""
    runs = [node_loss(*args, **kwargs) for _ in range(max(1, reps))]
    out = dict(runs[0])
    if reps > 1 and all("recovery_s" in r for r in runs):
        got = [r["recovery_s"] for r in runs]
        out["reps"] = got
        out["from_stop_reps"] = [r["from_stop_s"] for r in runs]
        out["recovery_s"] = None if None in got else statistics.median(got)
        out["from_stop_s"] = None if None in got else statistics.median(out["from_stop_reps"])
        out["runs"] = runs
    return out


def ray_cluster(cluster, system, workload, timeout):
    """5: creation -> head and every worker Running."""
    ns = new_namespace(cluster, system.key, workload)
    tracker = Tracker(cluster.api, ns, system.job_of, workload.pods)
    tracker.start()
    sent = create_jobs(cluster, system, workload, ns)
    job = next(iter(sent))
    at = tracker.wait_all_running([job], timeout)
    tracker.close()
    cluster.delete_namespace(ns)
    return (at - sent[job]) if at else None


def fmt(v):
    return "-" if v is None else f"{v:.2f}"


def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None
