"""bench/peers/harness/gang.py: which launchers a node loss freezes (workload 3). Gang talks to two
seams: the API (it reads the TrainingJob, its rendezvous Secret and its pods) and the helper
process bench/peers/gang/peers_launcher_gang (one JSON line, then "freeze <i>" lines). Here the
reads are answered from a table and the helper is a script that speaks the helper's protocol and
records every line it gets; what is checked is Gang's own logic: every rank whose pod sits on the
lost node is frozen, and no other, whatever the placement."""
import base64
import json
import os
import stat
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "peers"))
# harness.kube reads kubeconfigs with PyYAML, which a plain python3 may lack (unused here).
sys.modules.setdefault("yaml", types.ModuleType("yaml"))
from harness import gang as ganglib  # noqa: E402

# The helper's protocol (peers_launcher_gang.cc): "ready" after the first line, "frozen" per
# "freeze <i>" with i a pod of the gang, "error ..." otherwise; every line recorded in
# <cwd>/helper.log (the first as the JSON it got).
RECORDING_HELPER = r'''#!/usr/bin/env python3
import json, sys
log = open("helper.log", "a")
gang = json.loads(sys.stdin.readline())
log.write(json.dumps(gang) + "\n"); log.flush()
print("ready", flush=True)
for line in sys.stdin:
    line = line.strip()
    log.write(line + "\n"); log.flush()
    if line.startswith("freeze ") and 0 <= int(line[7:]) < len(gang["pods"]):
        print("frozen", flush=True)
    else:
        print("error " + line, flush=True)
'''


class Api:
    """The reads Gang makes, answered from the job's pods."""

    def __init__(self, ns, job, nodes):
        self.ns, self.job = ns, job
        self.pods = [{"metadata": {"name": f"{job}-worker-{i}", "uid": f"uid-{i}",
                                   "labels": {"lockstep.dev/job-name": job,
                                              "lockstep.dev/replica-index": str(i)}},
                      "spec": {"nodeName": node},
                      "status": {"podIP": f"10.244.0.{10 + i}", "phase": "Running"}}
                     for i, node in enumerate(nodes)]
        self.pods.reverse()  # the API lists in any order; ranks come from the replica index

    def get(self, path):
        if path == f"/apis/lockstep.dev/v1alpha1/namespaces/{self.ns}/trainingjobs/{self.job}":
            return {"metadata": {"uid": "job-uid"}, "spec": {"replicas": len(self.pods)},
                    "status": {"rendezvous": {"round": 0}}}
        if path == f"/api/v1/namespaces/{self.ns}/secrets/{self.job}-rdzv":
            return {"data": {"token": base64.b64encode(b"t0ken").decode()}}
        raise AssertionError(f"unexpected GET {path}")

    def list(self, path, selector=None):
        assert path == f"/api/v1/namespaces/{self.ns}/pods", path
        assert selector == f"lockstep.dev/job-name={self.job}", selector
        return list(self.pods), "1"


class GangFreezeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = os.path.join(self.tmp.name, "build")
        os.makedirs(os.path.join(self.build, "bin"))
        helper = os.path.join(self.build, ganglib.HELPER)
        with open(helper, "w") as f:
            f.write(RECORDING_HELPER)
        os.chmod(helper, os.stat(helper).st_mode | stat.S_IXUSR)

    def tearDown(self):
        self.tmp.cleanup()

    def lose(self, nodes, lost):
        """Starts a gang whose rank i runs on nodes[i], loses `lost`; returns (the pods the
        helper was given, the ranks it was told to freeze)."""
        cluster = types.SimpleNamespace(api=Api("ns", "j", nodes))
        gang = ganglib.Gang(cluster, self.build, "ns", "j", 1, self.tmp.name)
        try:
            gang.freeze(lost)
        finally:
            gang.close()
        with open(os.path.join(gang.dir, "helper.log")) as f:
            lines = f.read().splitlines()
        pods = json.loads(lines[0])["pods"]
        frozen = [int(line.split()[1]) for line in lines[1:]]
        return pods, frozen

    def on(self, pods, node):
        return [i for i, p in enumerate(pods) if p["node"] == node]

    def test_every_launcher_of_the_gang_on_the_lost_node_is_frozen(self):
        # Five of eight ranks share n1 (not adjacent ranks), the rest on n2 and n3.
        nodes = ["n1", "n2", "n1", "n1", "n3", "n1", "n2", "n1"]
        pods, frozen = self.lose(nodes, "n1")
        self.assertEqual([p["node"] for p in pods], nodes)  # pod i of the helper is rank i
        self.assertEqual(sorted(frozen), self.on(pods, "n1"))
        self.assertEqual(sorted(frozen), [0, 2, 3, 5, 7])

    def test_a_gang_packed_onto_the_lost_node_is_frozen_whole(self):
        pods, frozen = self.lose(["n4"] * 8, "n4")
        self.assertEqual(sorted(frozen), list(range(8)))

    def test_a_spread_gang_loses_only_the_rank_on_that_node(self):
        pods, frozen = self.lose([f"n{i}" for i in range(8)], "n5")
        self.assertEqual(frozen, [5])

    def test_a_node_holding_none_of_the_gang_freezes_nothing(self):
        pods, frozen = self.lose(["n1"] * 4 + ["n2"] * 4, "n9")
        self.assertEqual(frozen, [])


if __name__ == "__main__":
    unittest.main()
