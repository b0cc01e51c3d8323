"""TensorFlow model parallelism with DTensor multi-client under lockstep-launcher
(--framework tensorflow, role worker; one DTensor client per pod).

The model-parallel line of TensorFlow (Mesh TensorFlow, then GShard) lives on as DTensor. The
launcher sets the multi-client variables from the world: DTENSOR_CLIENT_ID (the worker index),
DTENSOR_NUM_CLIENTS, DTENSOR_JOB_NAME=worker and DTENSOR_JOBS (every worker's host:port), so
`dtensor.initialize_accelerator_system("CPU")` connects the clients; nothing here is specific to
Lockstep.

Each client exposes --local-devices logical CPUs. The mesh is model x batch with "model" spanning
the clients (pods): a 2-layer MLP whose hidden dimension is sharded over "model" (W1 by columns,
W2 by rows), its batch over "batch"; DTensor's SPMD expansion inserts the collectives. After
--steps steps each client prints `DTENSOR client=<i> clients=<n> mesh=<model>x<batch>
w1=<sharding spec> loss=<first>-><last> sha=<digest of the full weights> ref_diff=<max |dtensor -
plain TF on one device|>`.
"""
import argparse
import hashlib
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

IN, HIDDEN, BATCH = 8, 16, 32


def init_weights():
    w1 = np.random.default_rng(0).normal(size=(IN, HIDDEN)).astype(np.float32) * 0.3
    w2 = np.random.default_rng(1).normal(size=(HIDDEN, 1)).astype(np.float32) * 0.3
    return w1, w2


def batch():
    """One fixed batch (full-batch gradient descent), so the loss falls step after step."""
    x = np.random.default_rng(100).normal(size=(BATCH, IN)).astype(np.float32)
    return x, (np.sin(x).sum(axis=1, keepdims=True) * 0.5).astype(np.float32)


def train(w1, w2, to_device, steps, lr=0.05):
    """SGD on the MLP; `to_device` places each batch (a DTensor layout, or nothing)."""
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) - y) ** 2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(lr * g1)
        w2.assign_sub(lr * g2)
        return loss

    x, y = batch()
    x, y = to_device(x), to_device(y)
    return [step(x, y) for _ in range(steps)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--local-devices", type=int, default=2)
    args = p.parse_args()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * args.local_devices)
    dtensor.initialize_accelerator_system("CPU")  # reads DTENSOR_* from the environment
    clients = dtensor.num_clients()
    mesh = dtensor.create_distributed_mesh([("model", clients), ("batch", args.local_devices)],
                                           device_type="CPU")
    replicated = dtensor.Layout.replicated(mesh, rank=2)

    def sharded(value, spec):
        return dtensor.relayout(dtensor.copy_to_mesh(tf.constant(value), replicated),
                                dtensor.Layout(spec, mesh))

    init1, init2 = init_weights()
    w1 = dtensor.DVariable(sharded(init1, [dtensor.UNSHARDED, "model"]))
    w2 = dtensor.DVariable(sharded(init2, ["model", dtensor.UNSHARDED]))
    losses = train(w1, w2, lambda v: sharded(v, ["batch", dtensor.UNSHARDED]), args.steps)
    losses = [float(dtensor.unpack(l)[0]) for l in losses]
    full = [dtensor.unpack(dtensor.relayout(w, replicated))[0].numpy() for w in (w1, w2)]

    # The reference: the same training in plain TensorFlow on this client's own CPU.
    with tf.device(tf.config.list_logical_devices("CPU")[0].name):
        r1, r2 = (tf.Variable(v) for v in init_weights())
        train(r1, r2, tf.constant, args.steps)
    diff = max(float(np.max(np.abs(a - b.numpy()))) for a, b in zip(full, (r1, r2)))

    h = hashlib.sha256()
    for w in full:
        h.update(np.ascontiguousarray(w).tobytes())
    print(f"DTENSOR client={dtensor.client_id()} clients={clients} "
          f"mesh={clients}x{args.local_devices} w1={dtensor.fetch_layout(w1).sharding_specs} "
          f"loss={losses[0]:.4f}->{losses[-1]:.4f} sha={h.hexdigest()[:16]} ref_diff={diff:.3g}",
          flush=True)


if __name__ == "__main__":
    main()
