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
    placement: str = ""       # node loss: PLACEMENTS (node_loss below)
    lose: str = "last"        # node loss: the node of the pod whose name sorts "first" or "last"

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


NODE_LOSS_POOL = "nodeloss"
NODE_LOSS_POOL_NODES = 9     # the packed gang's node and 8 to recover onto, from the list's end
PLACEMENTS = ("packed", "spread", "spread-rank0")


def node_loss(nodes, placement):
    """3. One job of 8 pods running; the node of one of its pods stops heartbeating. The
    placement is the same for every system, whatever its scheduler would choose:
    packed: 8 pods x 1 GPU, all on one 8-GPU node (the pool NODE_LOSS_POOL is that node alone
      until the job runs, then NODE_LOSS_POOL_NODES nodes): the lost node takes the whole gang,
      no pod of it is left to notice, so only the node's Lease can tell any system;
    spread: 8 pods x 8 GPUs, a whole node each, so the gang spans 8 nodes: the lost node is a
      plain worker's (the pod whose name sorts last), and the other seven (Lockstep's launchers,
      rank 0's among them) can report it;
    spread-rank0: as spread, but the lost node is rank 0's (the pod whose name sorts first:
      Lockstep's worker-0 hosts the rendezvous its peers report to, so its loss leaves them no
      one to tell but the Lease)."""
    if placement == "packed":
        return Workload("nlpacked", 1, 8, 1, NODE_LOSS_POOL_NODES * 8, pool=NODE_LOSS_POOL,
                        placement=placement)
    if placement == "spread":
        return Workload("nlspread", 1, 8, 8, nodes * 8, placement=placement)
    if placement == "spread-rank0":
        return Workload("nlrank0", 1, 8, 8, nodes * 8, placement=placement, lose="first")
    raise ValueError(f"unknown node-loss placement {placement!r} (known: {', '.join(PLACEMENTS)})")


def ray(nodes):
    """5. A Ray cluster of 1 head + 7 workers."""
    return Workload("ray", 1, 8, 1, nodes * 8, ray=True)
