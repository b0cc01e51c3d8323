"""PyTorch Lightning under lockstep-launcher (--framework pytorch).

Lightning detects TorchElasticEnvironment because the launcher sets TORCHELASTIC_RUN_ID (as
torchrun does), and reads RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK and MASTER_ADDR/PORT from
it, so the Trainer only needs the shape: devices = processes per pod, num_nodes = pods.
Prints `CLUSTER_ENV <class> world_size=<n>` and `WEIGHTS rank=<r> world=<n> sha=<digest>`.
"""
import hashlib
import os

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(512, 16, generator=g)
    data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True) * 0.5), batch_size=32)
    model = Regressor()
    trainer = L.Trainer(
        accelerator="cpu",
        devices=int(os.environ["LOCAL_WORLD_SIZE"]),
        num_nodes=int(os.environ["GROUP_WORLD_SIZE"]),
        strategy="ddp",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    env = trainer.strategy.cluster_environment
    print(f"CLUSTER_ENV {type(env).__name__} world_size={trainer.world_size}", flush=True)
    trainer.fit(model, data)
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    print(f"WEIGHTS rank={trainer.global_rank} world={trainer.world_size} "
          f"sha={h.hexdigest()[:16]}", flush=True)
    # Lightning leaves the default process group up; without this the gloo group's teardown at
    # interpreter exit can hang.
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
