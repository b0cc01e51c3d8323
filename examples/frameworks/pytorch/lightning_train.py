"""PyTorch Lightning under lockstep-launcher (--framework pytorch).

Lightning detects TorchElasticEnvironment because the launcher sets TORCHELASTIC_RUN_ID (as
torchrun does), and reads RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK and MASTER_ADDR/PORT from
it, so the Trainer only needs the shape: devices = processes per pod, num_nodes = pods.

  --strategy ddp   DistributedDataParallel.
  --strategy fsdp  FSDP2 through Lightning's ModelParallelStrategy: configure_model() calls
                   fully_shard over the data-parallel mesh, and checkpoints are sharded
                   (torch.distributed.checkpoint, one file per rank in <checkpoint-dir>/last.ckpt/).
                   Lightning's older FSDPStrategy refuses a CPU accelerator; this one runs on
                   gloo/CPU and on GPUs alike.

With --checkpoint-dir every epoch is saved there and a restarted gang resumes from `last`
(printing `RESUMED rank=<r> epoch=<e> attempt=<n>`); --kill-once-at-epoch K makes --crash-rank
SIGKILL itself at the start of epoch K once (a marker in the checkpoint dir remembers it).
Prints `CLUSTER_ENV <class> world_size=<n>` and `WEIGHTS rank=<r> world=<n> sha=<digest>`.
"""
import argparse
import hashlib
import os
import signal
import sys

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from lightning_progress import LockstepProgress  # noqa: E402  (status.progress)


class Regressor(L.LightningModule):
    def __init__(self, fsdp=False):
        super().__init__()
        self.fsdp = fsdp
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def configure_model(self):
        if not self.fsdp:
            return
        from torch.distributed.fsdp import fully_shard
        mesh = self.device_mesh["data_parallel"]
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(self.net, mesh=mesh)

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.5)


class KillOnce(L.Callback):
    """--crash-rank SIGKILLs itself when epoch K starts, once per checkpoint dir."""

    def __init__(self, directory, epoch, rank):
        self.marker = os.path.join(directory, "killed-once")
        self.epoch, self.rank = epoch, rank

    def on_train_epoch_start(self, trainer, _):
        if trainer.current_epoch != self.epoch or trainer.global_rank != self.rank:
            return
        if os.path.exists(self.marker):
            return
        with open(self.marker, "w") as f:
            f.write(f"rank={self.rank} epoch={self.epoch}\n")
        print(f"KILLED rank={self.rank} epoch={self.epoch}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


class ReportResume(L.Callback):
    def on_train_start(self, trainer, _):
        if trainer.ckpt_path:
            attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
            print(f"RESUMED rank={trainer.global_rank} epoch={trainer.current_epoch} "
                  f"attempt={attempt}", flush=True)


def digest(module):
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        t = t.full_tensor() if hasattr(t, "full_tensor") else t  # FSDP2: gathered collectively
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def make_trainer(args):
    nodes, devices = int(os.environ["GROUP_WORLD_SIZE"]), int(os.environ["LOCAL_WORLD_SIZE"])
    if args.strategy == "fsdp":
        from lightning.pytorch.strategies import ModelParallelStrategy
        strategy = ModelParallelStrategy(data_parallel_size=nodes * devices, tensor_parallel_size=1)
    else:
        strategy = "ddp"
    callbacks = [ReportResume(), LockstepProgress(batch_size=32 * nodes * devices)]
    if args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        callbacks.append(L.pytorch.callbacks.ModelCheckpoint(
            dirpath=args.checkpoint_dir, save_last=True, every_n_epochs=1))
        if args.kill_once_at_epoch >= 0:
            callbacks.append(KillOnce(args.checkpoint_dir, args.kill_once_at_epoch,
                                      args.crash_rank))
    return L.Trainer(
        accelerator="cpu", devices=devices, num_nodes=nodes, strategy=strategy,
        max_epochs=args.epochs, logger=False, callbacks=callbacks,
        enable_checkpointing=bool(args.checkpoint_dir), enable_progress_bar=False,
        enable_model_summary=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strategy", choices=["ddp", "fsdp"], default="ddp")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--checkpoint-dir", default="")
    p.add_argument("--kill-once-at-epoch", type=int, default=-1)
    p.add_argument("--crash-rank", type=int, default=0)
    args = p.parse_args()
    if args.kill_once_at_epoch >= 0 and not args.checkpoint_dir:
        p.error("--kill-once-at-epoch needs --checkpoint-dir (the marker lives there)")
    g = torch.Generator().manual_seed(7)
    x = torch.randn(512, 16, generator=g)
    data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True) * 0.5), batch_size=32)
    model = Regressor(fsdp=args.strategy == "fsdp")
    trainer = make_trainer(args)
    env = trainer.strategy.cluster_environment
    print(f"CLUSTER_ENV {type(env).__name__} world_size={trainer.world_size}", flush=True)
    last = os.path.join(args.checkpoint_dir, "last.ckpt") if args.checkpoint_dir else ""
    trainer.fit(model, data, ckpt_path=last if last and os.path.exists(last) else None)
    print(f"WEIGHTS rank={trainer.global_rank} world={trainer.world_size} "
          f"sha={digest(model)}", flush=True)
    # Lightning leaves the default process group up; without this the gloo group's teardown at
    # interpreter exit can hang.
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    # And no interpreter teardown: with torch and gloo loaded a finished rank aborted there once
    # (SIGABRT in C++ static destructors), which restarts a job that is done. Output is flushed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
