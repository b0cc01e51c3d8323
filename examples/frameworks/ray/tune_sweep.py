"""Ray Tune under lockstep-launcher (--framework ray): a 4-trial sweep with the ASHA scheduler.

The head pod runs this script as the job's driver once every pod's Ray node is alive; nothing
here is specific to Lockstep. Each trial (one CPU) fits y = 3x + 1 with SGD at its learning rate
and reports its loss every epoch; ASHA stops the poor trials early. With the head started with
--num-cpus=0 and each worker pod's node with one CPU (examples/local/ray-tune.yaml), trials run
two at a time, one per worker pod.

Prints `TUNE_TRIAL lr=<lr> epochs=<reported> loss=<last> node=<node id prefix>` per trial, then
`TUNE trials=<n> errors=<n> stopped_early=<n> nodes=<distinct nodes> scheduler=<class>
best_lr=<lr> best_loss=<loss>`.
"""
import argparse
import tempfile

import numpy as np
import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler


def fit_line(config):
    node = ray.get_runtime_context().get_node_id()
    rng = np.random.default_rng(0)
    x = rng.normal(size=256)
    y = 3 * x + 1
    w = b = 0.0
    for _ in range(config["epochs"]):
        for i in range(0, 256, 32):
            err = w * x[i:i + 32] + b - y[i:i + 32]
            w -= config["lr"] * 2 * float(np.mean(err * x[i:i + 32]))
            b -= config["lr"] * 2 * float(np.mean(err))
        loss = float(np.mean((w * x + b - y) ** 2))
        tune.report({"loss": min(loss, 1e9), "node": node})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=8)
    args = p.parse_args()
    ray.init()
    scheduler = ASHAScheduler(max_t=args.epochs, grace_period=2, reduction_factor=2)
    tuner = tune.Tuner(
        tune.with_resources(fit_line, {"cpu": 1}),
        # Best first: ASHA compares a trial at each rung with those recorded there before it,
        # so the poorer trials that come later are the ones it stops early.
        param_space={"lr": tune.grid_search([0.2, 0.05, 0.005, 0.0005]), "epochs": args.epochs},
        tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=scheduler),
        run_config=tune.RunConfig(storage_path=tempfile.mkdtemp(prefix="tune-"), name="sweep",
                                  verbose=0),
    )
    results = tuner.fit()
    nodes = set()
    stopped_early = 0
    for r in results:
        epochs = r.metrics.get("training_iteration", 0)
        stopped_early += epochs < args.epochs
        nodes.add(r.metrics.get("node"))
        print(f"TUNE_TRIAL lr={r.config['lr']} epochs={epochs} loss={r.metrics.get('loss'):.4g} "
              f"node={str(r.metrics.get('node'))[:8]}", flush=True)
    best = results.get_best_result()
    print(f"TUNE trials={len(results)} errors={results.num_errors} stopped_early={stopped_early} "
          f"nodes={len(nodes)} scheduler={type(scheduler).__name__} best_lr={best.config['lr']} "
          f"best_loss={best.metrics['loss']:.4g}", flush=True)


if __name__ == "__main__":
    main()
