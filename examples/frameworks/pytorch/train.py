"""PyTorch DDP / FSDP2 training under lockstep-launcher (--framework pytorch).

The launcher gives every process torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR/PORT, TORCHELASTIC_*), so plain `init_process_group()` works; nothing here is
specific to Lockstep. With TORCHELASTIC_USE_AGENT_STORE=True the processes join the store that
node 0's launcher hosts instead of rank 0 hosting one.

Prints one line per rank, `WEIGHTS rank=<r> sha=<sha256 of the final weights> loss=<last loss>`,
so a test can check that every rank ends with identical weights; `RESUMED rank=<r> epoch=<e>
attempt=<n> format=<full|sharded>` when it starts from a checkpoint. With --fsdp the checkpoint
is sharded: torch.distributed.checkpoint writes one file per rank (its shards of the weights and
the optimizer state) into <checkpoint-dir>/dcp-epoch-<e>, and `latest` names the last complete
one; a restarted gang loads each rank's shards back. Test hooks for failure runs: --crash-at-epoch,
--kill-once-at-epoch (SIGKILL once, a marker in --checkpoint-dir), --exit-code (a permanent
error on stderr), --sleep-per-epoch.
"""
import argparse
import hashlib
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps-per-epoch", type=int, default=10)
    p.add_argument("--fsdp", action="store_true", help="shard with FSDP2 (fully_shard)")
    p.add_argument("--checkpoint-dir", default="", help="save each epoch; resume on restart")
    p.add_argument("--crash-at-epoch", type=int, default=-1,
                   help="demo of in-place restarts: --crash-rank exits 1 at this epoch on the "
                        "first attempt (TORCHELASTIC_RESTART_COUNT=0)")
    p.add_argument("--crash-rank", type=int, default=0)
    p.add_argument("--kill-once-at-epoch", type=int, default=-1,
                   help="--crash-rank SIGKILLs itself at this epoch once per checkpoint dir (a "
                        "marker file there remembers it): a rank lost mid-training")
    p.add_argument("--exit-code", type=int, default=0,
                   help="--crash-rank reports a permanent error on stderr and exits with this "
                        "code before training (a failure policy rule decides what it means)")
    p.add_argument("--sleep-per-epoch", type=float, default=0.0,
                   help="stretch each epoch, so a test can interrupt a running job")
    args = p.parse_args()
    if args.kill_once_at_epoch >= 0 and not args.checkpoint_dir:
        p.error("--kill-once-at-epoch needs --checkpoint-dir (the marker lives there)")
    return args


def kill_once(checkpoint_dir, rank, epoch):
    """SIGKILLs this process the first time it is called for a checkpoint dir."""
    marker = os.path.join(checkpoint_dir, "killed-once")
    if os.path.exists(marker):
        return
    os.makedirs(checkpoint_dir, exist_ok=True)
    open(marker, "w").write(f"rank={rank} epoch={epoch}\n")
    print(f"KILLED rank={rank} epoch={epoch}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def make_model():
    torch.manual_seed(0)  # same initial weights everywhere; DDP would broadcast them anyway
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))


def batch(rank, epoch, step, size):
    g = torch.Generator().manual_seed(1000 * rank + 100 * epoch + step)
    x = torch.randn(size, 16, generator=g)
    y = x.sum(dim=1, keepdim=True) * 0.5
    return x, y


def full_state(model):
    """Full (unsharded) parameters; under FSDP2 each is a DTensor gathered collectively."""
    out = {}
    for name, t in model.state_dict().items():
        out[name] = t.full_tensor() if hasattr(t, "full_tensor") else t
    return out


def digest(state):
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


class FullCheckpoint:
    """DDP: rank 0 writes the full weights and optimizer state to one file."""
    FORMAT = "full"

    def __init__(self, directory):
        self.path = os.path.join(directory, "checkpoint.pt")

    def load(self, model, opt, device):
        """The epoch to start from (0 without a checkpoint); every rank reads the same file."""
        if not os.path.exists(self.path):
            return 0
        saved = torch.load(self.path, map_location=device)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optim"])
        return saved["epoch"] + 1

    def save(self, model, opt, epoch, rank):
        if rank != 0:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": epoch},
                   self.path + ".tmp")
        os.replace(self.path + ".tmp", self.path)


class ShardedCheckpoint:
    """FSDP: torch.distributed.checkpoint, each rank writing and reading only its own shards."""
    FORMAT = "sharded"

    def __init__(self, directory):
        self.directory = directory
        self.latest = os.path.join(directory, "latest")

    def load(self, model, opt, device):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
        if not os.path.exists(self.latest):
            return 0
        epoch = int(open(self.latest).read())
        model_state, optim_state = get_state_dict(model, opt)
        state = {"model": model_state, "optim": optim_state}
        dcp.load(state, checkpoint_id=os.path.join(self.directory, f"dcp-epoch-{epoch}"))
        set_state_dict(model, opt, model_state_dict=state["model"],
                       optim_state_dict=state["optim"])
        return epoch + 1

    def save(self, model, opt, epoch, rank):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict
        model_state, optim_state = get_state_dict(model, opt)
        dcp.save({"model": model_state, "optim": optim_state},
                 checkpoint_id=os.path.join(self.directory, f"dcp-epoch-{epoch}"))
        dist.barrier()  # every rank's shards are written before `latest` names them
        if rank == 0:
            with open(self.latest + ".tmp", "w") as f:
                f.write(str(epoch))
            os.replace(self.latest + ".tmp", self.latest)


def main():
    args = parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if args.exit_code and rank == args.crash_rank:
        print(f"rank {rank}: dataset shard {rank} is unreadable (permanent error), exiting "
              f"{args.exit_code}", file=sys.stderr, flush=True)
        sys.exit(args.exit_code)

    model = make_model().to(device)
    if args.fsdp:
        from torch.distributed.fsdp import fully_shard
        fully_shard(model)
        wrapped = model
    else:
        wrapped = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.05, momentum=0.5)
    checkpoint = ShardedCheckpoint(args.checkpoint_dir) if args.fsdp else FullCheckpoint(
        args.checkpoint_dir)
    start_epoch = 0
    if args.checkpoint_dir:
        start_epoch = checkpoint.load(model, opt, device)
        if start_epoch > 0:
            print(f"RESUMED rank={rank} epoch={start_epoch} attempt={attempt} "
                  f"format={checkpoint.FORMAT}", flush=True)

    loss = torch.tensor(0.0)
    for epoch in range(start_epoch, args.epochs):
        if epoch == args.crash_at_epoch and rank == args.crash_rank and attempt == 0:
            print(f"CRASH rank={rank} epoch={epoch}", flush=True)
            os._exit(1)
        if epoch == args.kill_once_at_epoch and rank == args.crash_rank:
            kill_once(args.checkpoint_dir, rank, epoch)
        for step in range(args.steps_per_epoch):
            x, y = batch(rank, epoch, step, args.batch_size)
            opt.zero_grad()
            loss = nn.functional.mse_loss(wrapped(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
        if args.checkpoint_dir:
            checkpoint.save(model, opt, epoch, rank)
        dist.barrier()
        if args.sleep_per_epoch > 0:
            time.sleep(args.sleep_per_epoch)

    state = full_state(model)
    print(f"WEIGHTS rank={rank} world={world} sha={digest(state)} loss={loss.item():.6f}",
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
