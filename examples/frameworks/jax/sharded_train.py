"""JAX automatic sharding across processes under lockstep-launcher (--framework jax).

What Alpa automated now lives in XLA's sharding: one global Mesh over the devices of every
process, arrays laid out on it with NamedSharding, and a jitted training step whose parameters
and batch are sharded; XLA inserts the collectives. Here: a 2-layer MLP whose hidden dimension is
split over the mesh axis "model" (W1 by columns, W2 by rows) and whose batch is split over
"data". With 2 pods x 2 processes (one CPU device each) the mesh is data=2 x model=2, so both
kinds of collective cross processes and pods.

Each process builds its part of the global batch with jax.make_array_from_process_local_data
(only the rows its devices hold). After --steps steps every process gathers the parameters and
prints `JAX_SHARDED process=<i> count=<n> mesh=<data>x<model> loss=<first>-><last> sha=<digest>
ref_diff=<max |sharded - single-process|>`: the same training run unsharded on one device of
this process (the whole global batch, no collectives) is the single-process reference.
"""
import argparse
import hashlib
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

IN, HIDDEN, BATCH = 16, 32, 64


def init_params():
    w1 = np.random.default_rng(0).normal(size=(IN, HIDDEN)).astype(np.float32) * 0.1
    w2 = np.random.default_rng(1).normal(size=(HIDDEN, 1)).astype(np.float32) * 0.1
    return {"w1": w1, "w2": w2}


def global_batch(step):
    """The whole batch of a step; every process can make it, but feeds only its rows."""
    x = np.random.default_rng(100 + step).normal(size=(BATCH, IN)).astype(np.float32)
    return x, (np.sin(x).sum(axis=1, keepdims=True) * 0.5).astype(np.float32)


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


def sgd(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


def make_mesh():
    devices = np.array(jax.devices())  # every process's devices, ordered by process
    model = 2 if devices.size % 2 == 0 else 1
    return Mesh(devices.reshape(devices.size // model, model), ("data", "model"))


def local_part(sharding, global_value):
    """The rows of `global_value` this process's devices hold under `sharding`."""
    index = sharding.addressable_devices_indices_map(global_value.shape)
    rows = sorted({(s[0].start or 0, s[0].stop or global_value.shape[0]) for s in index.values()})
    return np.concatenate([global_value[a:b] for a, b in rows])


def sharded_run(mesh, steps):
    param_sh = {"w1": NamedSharding(mesh, P(None, "model")),
                "w2": NamedSharding(mesh, P("model", None))}
    batch_sh = NamedSharding(mesh, P("data", None))
    step = jax.jit(sgd, in_shardings=(param_sh, batch_sh, batch_sh),
                   out_shardings=(param_sh, NamedSharding(mesh, P())))
    params = {k: jax.make_array_from_callback(v.shape, param_sh[k], lambda i, v=v: v[i])
              for k, v in init_params().items()}
    losses = []
    for s in range(steps):
        x, y = global_batch(s)
        xs = jax.make_array_from_process_local_data(batch_sh, local_part(batch_sh, x), x.shape)
        ys = jax.make_array_from_process_local_data(batch_sh, local_part(batch_sh, y), y.shape)
        params, loss = step(params, xs, ys)
        losses.append(float(loss))  # replicated: addressable on every process
    full = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True))
            for k, v in params.items()}
    return full, losses


def single_process_run(steps):
    """The reference: the same steps on one local device with the whole batch."""
    device = jax.local_devices()[0]
    step = jax.jit(sgd)
    params = jax.device_put(init_params(), device)
    for s in range(steps):
        x, y = global_batch(s)
        params, _ = step(params, jax.device_put(x, device), jax.device_put(y, device))
    return {k: np.asarray(v) for k, v in params.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()
    # CPU collectives across processes go through Gloo; set before initialize().
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(os.environ["JAX_COORDINATOR_ADDRESS"],
                               int(os.environ["LOCKSTEP_NUM_PROCESSES"]),
                               int(os.environ["LOCKSTEP_PROCESS_ID"]))
    mesh = make_mesh()
    full, losses = sharded_run(mesh, args.steps)
    ref = single_process_run(args.steps)
    diff = max(float(np.max(np.abs(full[k] - ref[k]))) for k in full)
    h = hashlib.sha256()
    for k in sorted(full):
        h.update(k.encode())
        h.update(full[k].tobytes())
    shape = mesh.devices.shape
    print(f"JAX_SHARDED process={jax.process_index()} count={jax.process_count()} "
          f"mesh={shape[0]}x{shape[1]} loss={losses[0]:.6f}->{losses[-1]:.6f} "
          f"sha={h.hexdigest()[:16]} ref_diff={diff:.3g}", flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
