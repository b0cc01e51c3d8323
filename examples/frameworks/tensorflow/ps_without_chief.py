"""TensorFlow 1's between-graph parameter-server training, as Kubeflow TFJob manifests without a
chief run it (training-operator's `dist-mnist` example): PS and Worker tasks, no chief; worker 0
initialises the variables on the PS tasks, every worker trains against them until the shared
global step reaches --steps, and the PS tasks serve until the job ends. Written with
tf.compat.v1 so that TensorFlow 2 runs it; a linear regression on fixed data stands in for
MNIST, which a pod without network cannot download.

Under Lockstep (framework TensorFlow, roles `ps` and `worker`, no `chief`): each task reads its
TF_CONFIG from the launcher; once every worker has finished, the launchers stop the PS tasks and
the job succeeds (successPolicy All on role worker, as `kubectl lockstep convert` writes it).
Each worker prints `WEIGHTS rank=<task> step=<global step> sha=<digest of w>` at the end."""
import argparse
import hashlib
import json
import os

import numpy as np
import tensorflow as tf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    config = json.loads(os.environ["TF_CONFIG"])
    cluster, task = config["cluster"], config["task"]
    kind, index = task["type"], int(task["index"])
    tf.compat.v1.disable_eager_execution()
    server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=kind, task_index=index,
                                 protocol="grpc")
    if kind == "ps":
        print(f"ps {index} serving", flush=True)
        server.join()  # until the job ends (dist_mnist.py does the same)
        return
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype=np.float32)
    device = tf.compat.v1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{index}", cluster=cluster)
    with tf.compat.v1.device(device):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        w = tf.compat.v1.get_variable("w", shape=[4, 1], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x), w) - tf.constant(y)))
        train = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, global_step)
    # A worker talks to the PS tasks and itself only, as dist_mnist.py's device filters say:
    # another worker that has finished must not hold this one's session up.
    session_config = tf.compat.v1.ConfigProto(
        device_filters=["/job:ps", f"/job:worker/task:{index}"])
    # dist_mnist.py's Supervisor, without its checkpoints and summaries: worker 0 initialises the
    # variables on the PS tasks, the others wait for them (polling every second, as there).
    manager = tf.compat.v1.train.SessionManager(
        ready_op=tf.compat.v1.report_uninitialized_variables(), recovery_wait_secs=1)
    if index == 0:
        session = manager.prepare_session(server.target, config=session_config,
                                          init_op=tf.compat.v1.global_variables_initializer())
    else:
        session = manager.wait_for_session(server.target, config=session_config)
    step, first_loss, last_loss = session.run(global_step), None, None
    while step < args.steps:  # the shared step: together the workers take --steps
        _, current, step = session.run([train, loss, global_step])
        first_loss = current if first_loss is None else first_loss
        last_loss = current
    values = session.run(w)
    print(f"worker {index}: {step} shared steps, loss {first_loss} -> {last_loss}", flush=True)
    digest = hashlib.sha256(np.asarray(values).tobytes()).hexdigest()[:16]
    print(f"WEIGHTS rank={index} step={step} sha={digest}", flush=True)


if __name__ == "__main__":
    main()
