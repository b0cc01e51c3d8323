"""Horovod (PyTorch) under lockstep-launcher (--framework horovod), with no horovodrun, mpirun
or ssh: the launcher exports the per-process HOROVOD_* variables horovodrun would, with the
Gloo controller, and node 0's launcher serves Horovod's Gloo HTTP rendezvous
(HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT). Nothing here is specific to Lockstep but the restart
count it prints (LOCKSTEP_RESTART_COUNT).

The usual Horovod recipe: hvd.init(), hvd.DistributedOptimizer, hvd.broadcast_parameters and
hvd.broadcast_optimizer_state from rank 0. With --checkpoint-dir rank 0 saves every epoch and a
restarted gang resumes: rank 0 loads the checkpoint and the broadcasts hand it to every rank
(`RESUMED rank=<r> epoch=<e> attempt=<n>`). --kill-once-at-epoch K makes --crash-rank SIGKILL
itself at epoch K once (a marker in the checkpoint dir remembers it).

Prints `HVD rank=<r> size=<n> local=<local rank>/<local size> cross=<cross rank>/<cross size>
sum=<allreduce of rank+1> sha=<digest of the final weights>`.
"""
import argparse
import hashlib
import os
import signal

import horovod.torch as hvd
import torch
import torch.nn as nn


def kill_once(directory, rank, epoch):
    marker = os.path.join(directory, "killed-once")
    if os.path.exists(marker):
        return
    with open(marker, "w") as f:
        f.write(f"rank={rank} epoch={epoch}\n")
    print(f"KILLED rank={rank} epoch={epoch}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def load(path, model, opt):
    """Rank 0 only: the epoch to start from (0 without a checkpoint)."""
    if not path or not os.path.exists(path):
        return 0
    saved = torch.load(path)
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optim"])
    return saved["epoch"] + 1


def save(path, model, opt, epoch):
    torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": epoch},
               path + ".tmp")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=5)
    p.add_argument("--checkpoint-dir", default="")
    p.add_argument("--kill-once-at-epoch", type=int, default=-1)
    p.add_argument("--crash-rank", type=int, default=0)
    args = p.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    total = hvd.allreduce(torch.tensor([float(rank + 1)]), op=hvd.Sum)

    torch.manual_seed(rank)  # different on purpose: the broadcast must make them equal
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    base = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    path = os.path.join(args.checkpoint_dir, "checkpoint.pt") if args.checkpoint_dir else ""
    start = load(path, model, base) if rank == 0 else 0
    start = hvd.broadcast_object(start, root_rank=0)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(base, root_rank=0)
    opt = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters())
    if start > 0:
        print(f"RESUMED rank={rank} epoch={start} "
              f"attempt={os.environ.get('LOCKSTEP_RESTART_COUNT', '0')}", flush=True)

    g = torch.Generator().manual_seed(rank)
    for epoch in range(start, args.epochs):
        if epoch == args.kill_once_at_epoch and rank == args.crash_rank:
            kill_once(args.checkpoint_dir, rank, epoch)
        for _ in range(args.steps_per_epoch):
            x = torch.randn(32, 8, generator=g)
            opt.zero_grad()
            nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) * 0.5).backward()
            opt.step()
        if path and rank == 0:
            save(path, model, base, epoch)
        hvd.allreduce(torch.zeros(1), name=f"epoch-{epoch}-done")  # the checkpoint is written

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().numpy().tobytes())
    print(f"HVD rank={rank} size={size} local={hvd.local_rank()}/{hvd.local_size()} "
          f"cross={hvd.cross_rank()}/{hvd.cross_size()} sum={int(total.item())} "
          f"sha={h.hexdigest()[:16]}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
