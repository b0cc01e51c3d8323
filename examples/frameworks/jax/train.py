"""JAX multi-process under lockstep-launcher (--framework jax).

jax.distributed.initialize() reads only JAX_COORDINATOR_ADDRESS from the environment; the process
count and id come from the launcher as LOCKSTEP_NUM_PROCESSES / LOCKSTEP_PROCESS_ID and are
passed on in this one line:

    jax.distributed.initialize(os.environ["JAX_COORDINATOR_ADDRESS"],
                               int(os.environ["LOCKSTEP_NUM_PROCESSES"]),
                               int(os.environ["LOCKSTEP_PROCESS_ID"]))

Then a few SGD steps of a linear model whose batch is sharded over every process's devices (the
gradient reduction crosses processes), and a cross-process sum. Prints
`JAX process=<i> count=<n> sum=<sum of 1..n> sha=<digest of the final weights>`.

--steps and --step-seconds make a longer job (the kubelet tier kills a node under one).
"""
import argparse
import hashlib
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--step-seconds", type=float, default=0.0,
                        help="sleep after each step, so the job lasts steps x this")
    args = parser.parse_args()
    # Cross-process collectives on CPU go through Gloo (GPUs use NCCL regardless). This must be
    # set before initialize(), and asking which backend is in use would already start it.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(os.environ["JAX_COORDINATOR_ADDRESS"],
                               int(os.environ["LOCKSTEP_NUM_PROCESSES"]),
                               int(os.environ["LOCKSTEP_PROCESS_ID"]))
    pid, count = jax.process_index(), jax.process_count()

    # Cross-process sum: each process contributes pid+1.
    gathered = multihost_utils.process_allgather(np.array([pid + 1.0]))
    total = int(np.sum(gathered))

    # Data parallel SGD: the global batch is sharded over all devices of all processes.
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rng = np.random.default_rng(pid)
    local_x = rng.normal(size=(8 * jax.local_device_count(), 4)).astype(np.float32)
    local_y = local_x.sum(axis=1, keepdims=True) * 0.5
    sharding = NamedSharding(mesh, P("data"))
    x = jax.make_array_from_process_local_data(sharding, local_x)
    y = jax.make_array_from_process_local_data(sharding, local_y)
    w = jnp.zeros((4, 1), jnp.float32)

    @jax.jit
    def step(w, x, y):
        grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * grad

    for _ in range(args.steps):
        w = step(w, x, y)
        if args.step_seconds > 0:
            w.block_until_ready()
            time.sleep(args.step_seconds)
    host_w = np.asarray(multihost_utils.process_allgather(w, tiled=True))
    sha = hashlib.sha256(host_w.tobytes()).hexdigest()[:16]
    print(f"JAX process={pid} count={count} devices={jax.device_count()} sum={total} sha={sha}",
          flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
