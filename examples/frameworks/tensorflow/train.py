"""TensorFlow multi-worker training under lockstep-launcher (--framework tensorflow).

The launcher gives each task its TF_CONFIG (cluster of chief/worker/ps host:port, and this task's
type and index), which both strategies read through TFConfigClusterResolver; nothing here is
specific to Lockstep.

  --strategy multi-worker-mirrored  every worker trains in sync (all-reduced updates); prints
                                    `WEIGHTS task=worker:<i> sha=<digest> loss=<a>-><b>`
                                    (digest identical everywhere)
  --strategy parameter-server       ps and worker tasks run a tf.distribute.Server; the chief
                                    coordinates training with ClusterCoordinator and prints
                                    `PS_DONE steps=<n> loss=<first>-><last>`
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def data(seed, n=256):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    return x, (x.sum(axis=1, keepdims=True) * 0.5).astype(np.float32)


def multi_worker_mirrored(steps):
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    x, y = data(seed=task["index"])  # each worker feeds its own shard of the data
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32).with_options(options)
    with strategy.scope():
        # MEAN aggregation: an update made in replica context is all-reduced across workers
        # before it is applied, so every worker applies the same averaged gradient.
        init = tf.random.stateless_normal([8, 1], seed=[0, 0]) * 0.1
        w = tf.Variable(init, aggregation=tf.VariableAggregation.MEAN)
        b = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
    iterator = iter(strategy.experimental_distribute_dataset(ds))

    @tf.function
    def train_step():
        def replica_fn(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.matmul(xb, w) + b - yb) ** 2)
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(0.05 * gw)
            b.assign_sub(0.05 * gb)
            return loss
        return strategy.run(replica_fn, args=next(iterator))

    losses = [float(strategy.reduce("MEAN", train_step(), axis=None)) for _ in range(steps)]
    h = hashlib.sha256()
    for v in (w, b):
        h.update(np.ascontiguousarray(v.numpy()).tobytes())
    print(f"WEIGHTS task={task['type']}:{task['index']} sha={h.hexdigest()[:16]} "
          f"loss={losses[0]:.4f}->{losses[-1]:.4f}", flush=True)


def parameter_server(steps):
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("worker", "ps"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                      task_index=resolver.task_id, protocol="grpc", start=True)
        server.join()  # runs until the chief's job is done and the pod is stopped
        return
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(tf.zeros([8, 1]))
        b = tf.Variable(0.0)

    def dataset_fn():
        x, y = data(seed=1)
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32)

    @tf.function
    def train_step(iterator):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.matmul(x, w) + b - y) ** 2)
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(0.05 * gw)
            b.assign_sub(0.05 * gb)
            return loss
        return strategy.run(replica_fn, args=next(iterator))

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(steps)]
    coordinator.join()
    first, last = float(losses[0].fetch()), float(losses[-1].fetch())
    print(f"PS_DONE steps={steps} loss={first:.4f}->{last:.4f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strategy", choices=["multi-worker-mirrored", "parameter-server"],
                   default="multi-worker-mirrored")
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    if args.strategy == "multi-worker-mirrored":
        multi_worker_mirrored(args.steps)
    else:
        parameter_server(args.steps)


if __name__ == "__main__":
    main()
