"""Watches a namespace's pods and keeps, per job, what the measurements need: when every pod of
the job was first seen Running, how many of its pods are bound right now, and every span in which
a job was partly bound. Times are when the harness received the watch event (time.time()), the
same clock for every system."""
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
        # Partial gangs timed by events, not samples: a job is partial while 0 < its bound pods
        # (not terminal) < its size. A span opens at the event that makes it partial and closes
        # at the one that ends it; the pod-seconds integrate its bound count over each span.
        self.holding = {}        # job -> pods bound and not terminal (_holds), retired or not
        self.partial_since = {}  # job -> start of its open partial span
        self.count_since = {}    # job -> time its current bound count began (while partial)
        self.partial_spans = []  # seconds of each closed span
        self.partial_pod_s = 0.0
        self.retired = set()     # jobs no longer accounted (the harness is finishing them)

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
            held_before = _holds(self.pods.get(uid))
            if kind == "DELETED":
                self.pods.pop(uid, None)
            else:
                self.pods[uid] = (job, pod["spec"].get("nodeName"), pod["status"].get("phase"),
                                  bool(pod["metadata"].get("deletionTimestamp")))
            delta = _holds(self.pods.get(uid)) - held_before
            if delta:
                self._account(job, delta, now)
            self.first_pod.setdefault(job, now)
            if job not in self.all_running and self.running(job) >= self.size:
                self.all_running[job] = now
            for w in self.waiters:
                if not w[1].is_set() and w[0](self):
                    w[2].append(now)
                    w[1].set()

    def _account(self, job, delta, now):
        """The job's bound count changed by delta at `now`: integrate the count it had while
        partial, and open or close its partial span."""
        before = self.holding.get(job, 0)
        after = before + delta
        self.holding[job] = after
        if job in self.retired:
            return
        self._integrate(job, before, now)
        if 0 < after < self.size:
            self.count_since[job] = now
            self.partial_since.setdefault(job, now)
        else:
            self._close_span(job, now)

    def retire(self, job, now):
        """Stops accounting the job (its pods are about to be marked Succeeded one by one, which
        is not a partial gang); a span still open ends now. Call with self.lock held."""
        self._integrate(job, self.holding.get(job, 0), now)
        self._close_span(job, now)
        self.retired.add(job)

    def _integrate(self, job, count, now):
        """Adds the pod-seconds of the job's current partial count, held since count_since."""
        if job in self.count_since:
            self.partial_pod_s += count * (now - self.count_since.pop(job))

    def _close_span(self, job, now):
        if job in self.partial_since:
            self.partial_spans.append(now - self.partial_since.pop(job))

    # Queries; call with self.lock held (predicates are).
    def live(self, job):
        return [(node, phase) for (j, node, phase, deleting) in self.pods.values()
                if j == job and not deleting and phase not in TERMINAL]

    def running(self, job, avoid_node=None):
        return sum(1 for node, phase in self.live(job) if phase == "Running" and node != avoid_node)

    def bound(self):
        """job -> pods bound to a node and holding it (not terminal; deleting pods hold their
        resources until they are gone): the counts _update keeps, jobs holding none left out."""
        return {j: n for j, n in self.holding.items() if n}

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


def _holds(entry):
    """1 when a tracked pod (job, node, phase, deleting) is bound and not terminal: it holds its
    node's resources (a deleting pod holds them until it is gone), else 0."""
    if entry is None:
        return 0
    _, node, phase, _ = entry
    return 1 if node and phase not in TERMINAL else 0
