"""Horovod (PyTorch) under lockstep-launcher (--framework horovod), with no horovodrun, mpirun
or ssh: the launcher exports the per-process HOROVOD_* variables horovodrun would, with the
Gloo controller, and node 0's launcher serves Horovod's Gloo HTTP rendezvous
(HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT). Nothing here is specific to Lockstep.

Prints `HVD rank=<r> size=<n> sum=<allreduce of rank+1> sha=<digest of the final weights>`.
"""
import hashlib

import horovod.torch as hvd
import torch
import torch.nn as nn


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    total = hvd.allreduce(torch.tensor([float(rank + 1)]), op=hvd.Sum)

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    g = torch.Generator().manual_seed(rank)
    for _ in range(10):
        x = torch.randn(32, 8, generator=g)
        opt.zero_grad()
        nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) * 0.5).backward()
        opt.step()
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().numpy().tobytes())
    print(f"HVD rank={rank} size={size} sum={int(total.item())} sha={h.hexdigest()[:16]}",
          flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
