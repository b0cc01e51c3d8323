"""Ray RLlib under lockstep-launcher (--framework ray): PPO on CartPole-v1.

The head pod runs this script as the job's driver once every pod's Ray node is alive (RAY_ADDRESS
from the launcher); nothing here is specific to Lockstep. The algorithm (its learner) lives in
the driver; --env-runners remote env runners of one CPU each sample episodes. With the head
started with --num-cpus=0 (LOCKSTEP_RAY_START_ARGS in examples/local/ray-rllib.yaml) they can only
be placed on the worker pods' nodes.

Trains until the mean episode return has risen by --rise over the first iteration's (at most
--max-iterations), then prints `RLLIB iterations=<n> return=<first>-><last> env_runners=<n>
env_runner_nodes=<distinct nodes> on_head=<env runners on the driver's node>` and exits 0; exits
1 if the return never rose.
"""
import argparse
import os

# RLlib imports every deep-learning framework it finds, and TensorFlow's copy of LLVM and
# triton's (torch's compiler) in one process abort it ("CommandLine Error: Option
# 'bitcode-mdindex-threshold' registered more than once!"; `import tensorflow, triton` alone does
# it). This example uses torch only; RLlib's own switches keep TensorFlow (and JAX) out of the
# driver, and the pods' environment (examples/local/ray-rllib.yaml) out of the env runners.
for name in ("RLLIB_TEST_NO_TF_IMPORT", "RLLIB_TEST_NO_JAX_IMPORT"):
    os.environ.setdefault(name, "1")

import ray  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402


def episode_return(result):
    return result["env_runners"]["episode_return_mean"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--env-runners", type=int, default=2)
    p.add_argument("--max-iterations", type=int, default=8)
    p.add_argument("--rise", type=float, default=1.25, help="stop once last >= first * rise")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    ray.init()
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=args.env_runners, num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=1000, minibatch_size=250, num_epochs=6, lr=3e-4)
        # A fixed seed: the same episodes, so the same number of iterations every run (an
        # unlucky unseeded run could take all 8, each tens of seconds on a loaded machine).
        .debugging(seed=args.seed)
    )
    algo = config.build_algo()
    nodes = algo.env_runner_group.foreach_env_runner(
        lambda _: ray.get_runtime_context().get_node_id(), local_env_runner=False)
    head = ray.get_runtime_context().get_node_id()
    returns = []
    for _ in range(args.max_iterations):
        returns.append(episode_return(algo.train()))
        print(f"RLLIB_ITERATION {len(returns)} return={returns[-1]:.1f}", flush=True)
        if len(returns) >= 2 and returns[-1] >= returns[0] * args.rise:
            break
    algo.stop()
    print(f"RLLIB iterations={len(returns)} return={returns[0]:.1f}->{returns[-1]:.1f} "
          f"env_runners={len(nodes)} env_runner_nodes={len(set(nodes))} "
          f"on_head={sum(n == head for n in nodes)}", flush=True)
    if returns[-1] < returns[0] * args.rise:
        raise SystemExit(f"the mean return did not rise: {returns}")


if __name__ == "__main__":
    main()
