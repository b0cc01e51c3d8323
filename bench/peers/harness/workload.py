"""The one workload definition every system's manifests are rendered from (issue 16's five
workloads, and the quick subset)."""
from dataclasses import dataclass


@dataclass
class Job:
    name: str
    pods: int
    gpus: int
    pool: str = ""         # nodeSelector bench.lockstep.dev/pool=<pool>; "" = any node
    topology: bool = False  # ask for rack locality (Lockstep topologyKeys, Kueue TAS)
    ray: bool = False       # 1 head + (pods - 1) workers


@dataclass
class Workload:
    key: str
    jobs: int
    pods: int
    gpus: int
    capacity_gpus: int        # GPUs of the nodes the workload may use (Kueue's quota)
    pool: str = ""
    topology: bool = False
    ray: bool = False
    finish_after: float = 0.0  # a job "finishes" this long after all its pods run (0: never)

    def job(self, i):
        return Job(f"{self.key}-{i:04d}", self.pods, self.gpus, self.pool, self.topology, self.ray)


CONTENTION_POOL = "contention"


def burst(nodes, jobs):
    """1. 500 jobs x 8 pods x 1 GPU created at once (quick: 20 jobs on 50 nodes)."""
    return Workload("burst", jobs, 8, 1, nodes * 8)


def contention(pool_nodes, jobs, finish_after):
    """2. Demand 2x capacity: jobs x 4 pods x 8 GPUs on pool_nodes whole 8-GPU nodes."""
    return Workload("contention", jobs, 4, 8, pool_nodes * 8, pool=CONTENTION_POOL,
                    finish_after=finish_after)


def node_loss(nodes):
    """3. One job of 8 pods x 1 GPU running; one of its nodes stops heartbeating."""
    return Workload("nodeloss", 1, 8, 1, nodes * 8)


def ray(nodes):
    """5. A Ray cluster of 1 head + 7 workers."""
    return Workload("ray", 1, 8, 1, nodes * 8, ray=True)
