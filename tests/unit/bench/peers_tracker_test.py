"""bench/peers/harness/tracker.py: partial gangs timed by the watch events (workload 2's
'partial-gang GPU-s by events'). Each case feeds pod events at given times and checks the spans
and pod-seconds the tracker accounts."""
import os
import sys
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "peers"))
# harness.kube (imported by the tracker for its API helpers, unused here) reads kubeconfigs with
# PyYAML, which a plain python3 may lack.
sys.modules.setdefault("yaml", types.ModuleType("yaml"))
from harness.tracker import Tracker  # noqa: E402


def pod(uid, node=None, phase="Pending", deleting=False, job="j"):
    meta = {"uid": uid, "labels": {"job": job}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-06T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase}}


def tracker(size=4):
    return Tracker(api=None, ns="ns", job_of=lambda p: p["metadata"]["labels"].get("job"),
                   pods_per_job=size)


class PartialSpansTest(unittest.TestCase):
    def test_pods_bound_one_by_one_hold_a_span_from_the_first_bind_to_the_last(self):
        t = tracker()
        for i in range(4):
            t._update("ADDED", pod(f"p{i}"), 0.0)
        for i in range(4):
            t._update("MODIFIED", pod(f"p{i}", node=f"n{i}"), 1.0 + i)
        self.assertEqual(t.partial_spans, [3.0])
        self.assertAlmostEqual(t.partial_pod_s, 1 + 2 + 3)  # 1, 2, then 3 pods for 1 s each

    def test_a_gang_created_placed_is_partial_only_between_its_creates(self):
        t = tracker()
        for i in range(4):
            t._update("ADDED", pod(f"p{i}", node=f"n{i}"), 10.0 + i / 100)
        self.assertEqual(len(t.partial_spans), 1)
        self.assertAlmostEqual(t.partial_spans[0], 0.03)
        self.assertAlmostEqual(t.partial_pod_s, 0.01 + 0.02 + 0.03)

    def test_a_retired_job_finishing_pod_by_pod_is_not_partial(self):
        t = tracker()
        for i in range(4):
            t._update("ADDED", pod(f"p{i}", node=f"n{i}"), 0.0)
        t.retire("j", 40.0)
        for i in range(4):
            t._update("MODIFIED", pod(f"p{i}", node=f"n{i}", phase="Succeeded"), 41.0 + i)
        self.assertEqual(t.partial_spans, [0.0])  # the four creates at one instant
        self.assertEqual(t.partial_pod_s, 0.0)
        self.assertEqual(t.bound(), {})  # the sampler's counts still follow a retired job

    def test_a_gang_that_never_completes_is_charged_until_it_is_retired(self):
        t = tracker()
        t._update("ADDED", pod("a", node="n0"), 0.0)
        t._update("ADDED", pod("b", node="n1"), 1.0)
        self.assertEqual(t.partial_since, {"j": 0.0})  # open since its first pod
        self.assertEqual(t.bound(), {"j": 2})
        t.retire("j", 5.0)
        self.assertEqual(t.partial_spans, [5.0])
        self.assertAlmostEqual(t.partial_pod_s, 1 * 1 + 2 * 4)
        t._update("ADDED", pod("c", node="n2"), 6.0)  # retired: no new span
        self.assertEqual(t.partial_spans, [5.0])

    def test_a_deleting_pod_holds_its_node_until_it_is_gone(self):
        t = tracker(size=2)
        t._update("ADDED", pod("a", node="n0"), 0.0)
        t._update("ADDED", pod("b", node="n1"), 0.0)
        t._update("MODIFIED", pod("a", node="n0", deleting=True), 1.0)
        self.assertEqual(t.partial_spans, [0.0])  # still whole while a is deleting
        self.assertEqual(t.bound(), {"j": 2})
        t._update("DELETED", pod("a", node="n0", deleting=True), 2.0)
        t._update("DELETED", pod("b", node="n1", deleting=True), 2.5)
        self.assertEqual(t.partial_spans, [0.0, 0.5])
        self.assertAlmostEqual(t.partial_pod_s, 0.5)

    def test_jobs_are_accounted_apart(self):
        t = tracker(size=2)
        t._update("ADDED", pod("a", node="n0", job="x"), 0.0)
        t._update("ADDED", pod("b", node="n1", job="y"), 1.0)
        t._update("ADDED", pod("c", node="n2", job="x"), 2.0)
        t._update("ADDED", pod("d", node="n3", job="y"), 4.0)
        self.assertEqual(sorted(t.partial_spans), [2.0, 3.0])
        self.assertAlmostEqual(t.partial_pod_s, 2.0 + 3.0)


if __name__ == "__main__":
    unittest.main()
