"""Drives the launcher's TCPStore-compatible server with torch's own TCPStore client.

Run as N processes: tcpstore_client.py <host> <port> <rank> <world>.
Every assertion is against values other ranks wrote, so a server that drops, reorders or
misencodes anything fails here. Prints `STORE_OK rank=<r>` and `ALLREDUCE rank=<r> sum=<s>`.
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

host, port, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
store = dist.TCPStore(host, port, world_size=world, is_master=False,
                      timeout=timedelta(seconds=30))

store.set(f"key/{rank}", f"value-{rank}")
assert store.add("counter", rank + 1) >= rank + 1
store.wait([f"key/{i}" for i in range(world)])
for i in range(world):
    assert store.get(f"key/{i}") == f"value-{i}".encode(), i
assert store.check([f"key/{i}" for i in range(world)])
assert not store.check(["never-set"])

# Everyone adds; wait for the barrier key the last adder sets.
total = store.add("arrived", 1)
if total == world:
    store.set("all-arrived", "yes")
store.wait(["all-arrived"])
assert int(store.get("counter")) == sum(range(1, world + 1))

# compare_set: exactly one rank wins the election.
won = store.compare_set("leader", "", f"rank-{rank}")
store.wait(["leader"])
leader = store.get("leader")
assert won == leader, (won, leader)

store.multi_set([f"m/{rank}/a", f"m/{rank}/b"], [b"A", f"B{rank}".encode()])
assert store.multi_get([f"m/{rank}/a", f"m/{rank}/b"]) == [b"A", f"B{rank}".encode()]

store.append(f"log/{rank}", "x")
store.append(f"log/{rank}", "y")
assert store.get(f"log/{rank}") == b"xy"
assert store.delete_key(f"log/{rank}")
assert not store.delete_key(f"log/{rank}")
assert store.num_keys() >= world

# A wait on a key nobody sets times out cleanly (CANCEL_WAIT round trip), and the
# connection keeps working afterwards.
try:
    store.wait([f"missing/{rank}"], timedelta(milliseconds=300))
    raise AssertionError("wait on a missing key returned")
except (RuntimeError, dist.DistStoreError):
    pass
assert store.get(f"key/{rank}") == f"value-{rank}".encode()

# Queues: every rank pops one item with a blocking pop, before rank 0 has pushed them (it waits
# half a second first), so the pops wait on the server and are woken one per push. torch's pop is
# two requests (WAIT, then QUEUE_POP); the server reserves the item for the woken client, so a
# rank whose WAIT arrives in between cannot take it (QueueEmptyError; see tcpstore_state.h).
if rank == 0:
    import time
    time.sleep(0.5)
    for i in range(world):
        store.queue_push("work", f"item-{i}")
item = store.queue_pop("work")
assert item.startswith(b"item-"), item
print(f"STORE_OK rank={rank}", flush=True)

# The store carries a real process group: gloo's rendezvous runs over it.
dist.init_process_group("gloo", store=dist.PrefixStore("pg", store), rank=rank, world_size=world,
                        timeout=timedelta(seconds=60))
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"ALLREDUCE rank={rank} sum={int(t.item())}", flush=True)
dist.destroy_process_group()
