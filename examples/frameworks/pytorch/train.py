"""PyTorch DDP / FSDP2 training under lockstep-launcher (--framework pytorch).

The launcher gives every process torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR/PORT, TORCHELASTIC_*), so plain `init_process_group()` works; nothing here is
specific to Lockstep. With TORCHELASTIC_USE_AGENT_STORE=True the processes join the store that
node 0's launcher hosts instead of rank 0 hosting one.

Prints one line per rank, `WEIGHTS rank=<r> sha=<sha256 of the final weights> loss=<last loss>`,
so a test can check that every rank ends with identical weights; `RESUMED rank=<r> epoch=<e>
attempt=<n> format=<full|sharded> step=<steps done>` when it starts from a checkpoint. With --fsdp
the checkpoint is sharded: torch.distributed.checkpoint writes one file per rank (its shards of
the weights and the optimizer state) into <checkpoint-dir>/dcp-epoch-<e> (dcp-step-<n> for a stop
mid-epoch), and `latest` names the last complete one; a restarted gang loads each rank's shards
back. Test hooks for failure runs: --crash-at-epoch,
--kill-once-at-epoch (SIGKILL once, a marker in --checkpoint-dir), --exit-code (a permanent
error on stderr), --sleep-per-epoch, --sleep-per-step.

Graceful stop (suspend, preemption, eviction: the kubelet sends SIGTERM, the launcher forwards it
and waits up to the pod's grace): the handler only sets a flag. Every step ends with an
all-reduce (MAX) of the flag, so all ranks agree on the step to stop after even when their
SIGTERMs arrive at different moments; then the checkpoint is written at that step (rank 0 alone,
tmp + rename; FSDP: every rank its shards), every rank prints `STOPPED step=<N> rank=<r>` and
exits 0. A rank stopped by its peers' agreement before its own SIGTERM came waits for it (at
most --stop-wait seconds, then exits 1 so a launcher still running it restarts it from the
checkpoint): exiting 0 unasked would read as a success. A rank whose gang has not agreed
TRAIN_STUCK_STOP_TIMEOUT (5) seconds after its SIGTERM is stuck (a peer gone mid-collective)
and exits 143 without a checkpoint. The data of a step depends only on
(rank, epoch, step) and the checkpoint holds the weights, the optimizer state and the step, so a
resumed run ends bit-identical to an uninterrupted one.
"""
import argparse
import hashlib
import os
import signal
import sys
import time

# Before the slow imports below: a SIGTERM while torch loads must not kill the process unheard.
# "agreed": the gang settled on the step to stop after (a stop in progress, not a stuck one).
STOP = {"requested": False, "agreed": False}


def _request_stop(signum, frame):
    STOP["requested"] = True


def _watch_for_a_stuck_stop(timeout):
    """Exits 143 when the gang has not agreed to stop `timeout` s after SIGTERM.

    Python runs a signal handler only between bytecodes, so a rank blocked in a collective whose
    peer is gone (the launcher stopping the gang after a failure) would never see its flag and
    would hold the launcher until its SIGKILL. Python's C-level handler still writes the signal
    to the wakeup fd at once, and this thread (the collective released the GIL) reads it.
    """
    import socket
    import threading
    r, w = socket.socketpair()
    w.setblocking(False)
    signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
    STOP["wakeup_fd"] = w  # kept open: the interpreter writes to its number, not to the object

    def run():
        while signal.SIGTERM not in r.recv(64):
            pass
        if not wait_until(lambda: STOP["agreed"], timeout):
            print(f"SIGTERM and no step agreed on within {timeout:g} s (a peer is gone, or "
                  f"training had not started): exiting without a checkpoint", file=sys.stderr,
                  flush=True)
            os._exit(143)

    threading.Thread(target=run, daemon=True).start()


signal.signal(signal.SIGTERM, _request_stop)
_watch_for_a_stuck_stop(float(os.environ.get("TRAIN_STUCK_STOP_TIMEOUT", "5")))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from progress import ProgressReporter  # noqa: E402  (status.progress; a no-op off Lockstep)


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
    p.add_argument("--sleep-per-step", type=float, default=0.0,
                   help="stretch each step, so a test can stop a job mid-epoch")
    p.add_argument("--stop-wait", type=float, default=60.0,
                   help="seconds a rank stopped by its peers waits for its own SIGTERM")
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
    """DDP: rank 0 writes the full weights, the optimizer state and the step to one file."""
    FORMAT = "full"

    def __init__(self, directory):
        self.path = os.path.join(directory, "checkpoint.pt")

    def load(self, model, opt, device, steps_per_epoch):
        """The global step to start from (0 without a checkpoint); every rank reads the file."""
        if not os.path.exists(self.path):
            return 0
        saved = torch.load(self.path, map_location=device)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optim"])
        if "step" in saved:
            return saved["step"]
        return (saved["epoch"] + 1) * steps_per_epoch  # a checkpoint of an epoch's end

    def save(self, model, opt, step, rank, steps_per_epoch):
        """`step`: steps done. Atomic: a reader sees the previous file or this one, whole."""
        if rank != 0:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(),
                    "epoch": step // steps_per_epoch - 1, "step": step}, self.path + ".tmp")
        os.replace(self.path + ".tmp", self.path)


class ShardedCheckpoint:
    """FSDP: torch.distributed.checkpoint, each rank writing and reading only its own shards.

    An epoch's end goes to dcp-epoch-<e>, a stop mid-epoch to dcp-step-<n>; `latest` holds
    "<steps done> <directory>" and is replaced (tmp + rename) once every rank's shards are written.
    """
    FORMAT = "sharded"

    def __init__(self, directory):
        self.directory = directory
        self.latest = os.path.join(directory, "latest")

    def load(self, model, opt, device, steps_per_epoch):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
        if not os.path.exists(self.latest):
            return 0
        step, name = open(self.latest).read().split()
        model_state, optim_state = get_state_dict(model, opt)
        state = {"model": model_state, "optim": optim_state}
        dcp.load(state, checkpoint_id=os.path.join(self.directory, name))
        set_state_dict(model, opt, model_state_dict=state["model"],
                       optim_state_dict=state["optim"])
        return int(step)

    def save(self, model, opt, step, rank, steps_per_epoch):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict
        name = (f"dcp-epoch-{step // steps_per_epoch - 1}" if step % steps_per_epoch == 0
                else f"dcp-step-{step}")
        model_state, optim_state = get_state_dict(model, opt)
        dcp.save({"model": model_state, "optim": optim_state},
                 checkpoint_id=os.path.join(self.directory, name))
        dist.barrier()  # every rank's shards are written before `latest` names them
        if rank == 0:
            with open(self.latest + ".tmp", "w") as f:
                f.write(f"{step} {name}")
            os.replace(self.latest + ".tmp", self.latest)


def settle_ddp_buckets(wrapped, device):
    """One backward of a zero loss, before any real step, so DDP rebuilds its gradient buckets now.

    DDP re-lays its buckets after its first iteration, and gloo's all-reduce sums an element in an
    order that depends on its position in the bucket: without this, the first step after a resume
    would sum in the old layout where an uninterrupted run uses the new one, and the weights
    would differ in their last bits. The gradients are zero and no optimizer step follows.
    """
    x = torch.zeros(1, 16, device=device)
    (wrapped(x).sum() * 0.0).backward()
    for p in wrapped.parameters():
        p.grad = None


def gang_agrees_to_stop(device):
    """True on every rank once any rank got SIGTERM: the same answer at the same step."""
    flag = torch.tensor([1.0 if STOP["requested"] else 0.0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return flag.item() > 0


def stop(args, checkpoint, model, opt, step, rank):
    """Checkpoints at `step` (steps done), says so, and exits once this rank was told to stop."""
    STOP["agreed"] = True
    if args.checkpoint_dir and step % args.steps_per_epoch != 0:  # an epoch's end is saved
        checkpoint.save(model, opt, step, rank, args.steps_per_epoch)
    print(f"STOPPED step={step} rank={rank} epoch={step // args.steps_per_epoch} "
          f"signalled={int(STOP['requested'])}", flush=True)
    if not wait_until(lambda: STOP["requested"], args.stop_wait):
        print(f"rank {rank}: stopped with the gang at step {step} but never got SIGTERM itself; "
              f"exiting 1 so the launcher restarts from the checkpoint", file=sys.stderr,
              flush=True)
        sys.exit(1)
    # Not sys.exit: the interpreter's teardown with torch loaded took 5-7 s here (load 8), more
    # than a short pod grace; the checkpoint is written and the output flushed, nothing is left.
    exit_now(0)


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
        settle_ddp_buckets(wrapped, device)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.05, momentum=0.5)
    checkpoint = ShardedCheckpoint(args.checkpoint_dir) if args.fsdp else FullCheckpoint(
        args.checkpoint_dir)
    spe = args.steps_per_epoch
    start = 0
    if args.checkpoint_dir:
        start = checkpoint.load(model, opt, device, spe)
        if start > 0:
            print(f"RESUMED rank={rank} epoch={start // spe} attempt={attempt} "
                  f"format={checkpoint.FORMAT} step={start}", flush=True)

    loss = torch.tensor(0.0)
    # Rank 0 appends {"step", "totalSteps", "samplesPerSecond", "checkpointStep"} to
    # LOCKSTEP_PROGRESS_FILE.
    progress = ProgressReporter(total_steps=args.epochs * spe,
                                samples_per_step=args.batch_size * world)
    if args.checkpoint_dir:
        progress.checkpointed(start)  # a restart redoes the steps after this one
    for done in range(start + 1, args.epochs * spe + 1):  # `done`: steps done after this one
        epoch, step = divmod(done - 1, spe)
        if step == 0 and epoch == args.crash_at_epoch and rank == args.crash_rank and attempt == 0:
            print(f"CRASH rank={rank} epoch={epoch}", flush=True)
            os._exit(1)
        if step == 0 and epoch == args.kill_once_at_epoch and rank == args.crash_rank:
            kill_once(args.checkpoint_dir, rank, epoch)
        x, y = batch(rank, epoch, step, args.batch_size)
        opt.zero_grad()
        loss = nn.functional.mse_loss(wrapped(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        if args.sleep_per_step > 0:
            time.sleep(args.sleep_per_step)
        if step == spe - 1:
            if args.checkpoint_dir:
                checkpoint.save(model, opt, done, rank, spe)
                progress.checkpointed(done)
            dist.barrier()
            if args.sleep_per_epoch > 0:
                time.sleep(args.sleep_per_epoch)
        progress.report(done)
        if gang_agrees_to_stop(device):
            stop(args, checkpoint, model, opt, done, rank)
    progress.report(args.epochs * spe, force=True)

    state = full_state(model)
    print(f"WEIGHTS rank={rank} world={world} sha={digest(state)} loss={loss.item():.6f}",
          flush=True)
    dist.destroy_process_group()
    exit_now(0)


def wait_until(done, seconds):
    """Polls `done` every 50 ms for up to `seconds`; its last answer."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)
    return done()


def exit_now(code):
    """Ends the process without the interpreter's teardown. Seen in CI (torch 2.x, gloo): a rank
    that had printed its weights and destroyed its group aborted at exit ("terminate called
    without an active exception", SIGABRT) while C++ statics were destroyed, and the launcher
    rightly restarted a finished job. The results are printed and flushed; nothing is left."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
