"""Ray Train under lockstep-launcher (--framework ray).

Every pod runs `ray start --block`; on the head pod the launcher waits until all pods' nodes are
alive and then runs this script as the job's driver, with RAY_ADDRESS pointing at the cluster.
The head pod's (and so the job's) result is this script's exit code. Nothing here is specific to
Lockstep: it is a plain Ray Train TorchTrainer (one CPU worker per node by default).

Each worker checks that the world has --num-workers members and that its loss fell; the driver
prints `RAY_TRAIN workers=<n> nodes=<alive nodes> error=None`, then `RAY_CLUSTER cpus=<CPUs>`
(with one CPU per node, as in the launcher test, 3 one-CPU workers need all 3 nodes). --fail
makes worker 1 raise, so the driver (and the job) fails.
"""
import argparse
import tempfile

import ray
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer


def train_loop(config):
    import torch
    import torch.nn as nn
    import ray.train
    import ray.train.torch

    ctx = ray.train.get_context()
    if config["fail"] and ctx.get_world_rank() == 1:
        raise RuntimeError("worker 1 fails on purpose (--fail)")
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(ctx.get_world_rank())
    losses = []
    for _ in range(20):
        x = torch.randn(32, 8, generator=g)
        loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) * 0.5)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # Checked here: Ray Train 2.x only hands report() metrics back to the driver along with a
    # checkpoint, and a checkpoint needs storage every node shares.
    if ctx.get_world_size() != config["num_workers"] or not losses[-1] < losses[0]:
        raise RuntimeError(f"world {ctx.get_world_size()}, loss {losses[0]} -> {losses[-1]}")
    ray.train.report({"first": losses[0], "last": losses[-1], "world": ctx.get_world_size()})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=3)
    p.add_argument("--fail", action="store_true")
    args = p.parse_args()
    ray.init()  # RAY_ADDRESS from the launcher
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"fail": args.fail, "num_workers": args.num_workers},
        scaling_config=ScalingConfig(num_workers=args.num_workers, use_gpu=False,
                                     resources_per_worker={"CPU": 1}),
        run_config=RunConfig(storage_path=tempfile.mkdtemp(prefix="ray-results-")),
    )
    result = trainer.fit()  # raises if a worker failed
    nodes = sum(1 for n in ray.nodes() if n["Alive"])
    print(f"RAY_TRAIN workers={args.num_workers} nodes={nodes} error={result.error}", flush=True)
    print(f"RAY_CLUSTER cpus={int(ray.cluster_resources().get('CPU', 0))}", flush=True)


if __name__ == "__main__":
    main()
