"""Watches a namespace's pods and keeps, per job, what the measurements need: when every pod of
the job was first seen Running, and how many of its pods are bound right now. Times are when the
harness received the watch event (time.time()), the same clock for every system."""
import threading
import time

from . import kube as kubelib

TERMINAL = ("Succeeded", "Failed")


class Tracker:
    def __init__(self, api, ns, job_of, pods_per_job):
        self.api, self.ns, self.job_of, self.size = api, ns, job_of, pods_per_job
        self.lock = threading.Lock()
        self.pods = {}           # uid -> (job, node, phase, deleting)
        self.all_running = {}    # job -> first time all of its pods were Running
        self.first_pod = {}      # job -> first time one of its pods was seen
        self.waiters = []        # [predicate, threading.Event, [time]]
        self.stop = threading.Event()

    def start(self):
        items, rv = self.api.list(kubelib.pods_path(self.ns))
        now = time.time()
        for p in items:
            self._update("ADDED", p, now)
        self.thread = threading.Thread(target=self._watch, args=(rv,), daemon=True)
        self.thread.start()

    def _watch(self, rv):
        while not self.stop.is_set():
            try:
                self.api.watch(kubelib.pods_path(self.ns), rv, self._update, self.stop)
            except kubelib.ApiError:  # 410 Gone: relist and go on
                items, rv = self.api.list(kubelib.pods_path(self.ns))
                now = time.time()
                for p in items:
                    self._update("MODIFIED", p, now)

    def close(self):
        self.stop.set()

    def _update(self, kind, pod, now):
        job = self.job_of(pod)
        if not job:
            return
        uid = pod["metadata"]["uid"]
        with self.lock:
            if kind == "DELETED":
                self.pods.pop(uid, None)
            else:
                self.pods[uid] = (job, pod["spec"].get("nodeName"), pod["status"].get("phase"),
                                  bool(pod["metadata"].get("deletionTimestamp")))
            self.first_pod.setdefault(job, now)
            if job not in self.all_running and self.running(job) >= self.size:
                self.all_running[job] = now
            for w in self.waiters:
                if not w[1].is_set() and w[0](self):
                    w[2].append(now)
                    w[1].set()

    # Queries; call with self.lock held (predicates are).
    def live(self, job):
        return [(node, phase) for (j, node, phase, deleting) in self.pods.values()
                if j == job and not deleting and phase not in TERMINAL]

    def running(self, job, avoid_node=None):
        return sum(1 for node, phase in self.live(job) if phase == "Running" and node != avoid_node)

    def bound(self):
        """job -> pods bound to a node and holding it (not terminal; deleting pods hold their
        resources until they are gone)."""
        out = {}
        for (j, node, phase, deleting) in self.pods.values():
            if node and phase not in TERMINAL:
                out[j] = out.get(j, 0) + 1
        return out

    def wait(self, predicate, timeout):
        """Seconds-since-epoch of the event after which predicate(self) held, or None."""
        w = [predicate, threading.Event(), []]
        with self.lock:
            if predicate(self):
                return time.time()
            self.waiters.append(w)
        w[1].wait(timeout)
        with self.lock:
            self.waiters.remove(w)
        return w[2][0] if w[2] else None

    def wait_all_running(self, jobs, timeout):
        return self.wait(lambda t: all(j in t.all_running for j in jobs), timeout)
