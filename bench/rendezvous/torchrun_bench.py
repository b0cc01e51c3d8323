#!/usr/bin/env python3
"""torchrun's own c10d rendezvous vs lockstep-launcher, W agents each its own process on this
machine, alternating in one run (bench/rendezvous/README.md, "Agents").

Each agent is what a pod runs: `torchrun --nnodes W --rdzv-backend c10d` or `lockstep-launcher
--nnodes W`, both starting one worker that appends time.time() to a file and exits. Per
repetition the script reports:
  e2e_ms   every agent spawned at once -> the last worker started (includes torchrun's Python
           and torch import; the launcher is a static C++ binary),
  rdzv_ms  the last agent ready (torchrun: its torch.distributed.run imported; launcher: spawned)
           -> the last worker started: the rendezvous and worker launch alone.

  python torchrun_bench.py --launcher build-release/bin/lockstep-launcher --sizes 4,8,16 --reps 3

Run it through run.py's --agents (or as root directly): the torch side runs with the reverse
lookup of ::ffff:127.0.0.1 answered from a hosts file (see no_dns_stall in run.py).
"""
import argparse
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = "import sys,time; open(sys.argv[1],'a').write(repr(time.time())+chr(10))"
# torchrun as a pod runs it, plus one line that records when its imports are done.
AGENT = ("import sys,time; import torch.distributed.run as r; "
         "open(sys.argv.pop(1),'a').write(repr(time.time())+chr(10)); sys.exit(r.main())")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_times(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [float(x) for x in f.read().split()]


def run_agents(argvs, workers_file, ready_file, timeout):
    t0 = time.time()
    procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for a in argvs]
    failed = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=max(1, timeout - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        if p.returncode != 0:
            failed.append(err.decode(errors="replace")[-1500:])
    starts = read_times(workers_file)
    if failed or len(starts) != len(argvs):
        raise RuntimeError(f"{len(failed)} agents failed, {len(starts)}/{len(argvs)} workers "
                           f"started; first error:\n{failed[0] if failed else ''}")
    ready = read_times(ready_file) if ready_file else [t0]
    return (max(starts) - t0) * 1000, (max(starts) - max(ready)) * 1000


def torchrun(w, tmp, timeout):
    port, workers, ready = free_port(), os.path.join(tmp, "tw"), os.path.join(tmp, "tr")
    rdzv_id = secrets.token_hex(4)
    for f in (workers, ready):
        open(f, "w").close()
    argvs = [[sys.executable, "-c", AGENT, ready, "--nnodes", str(w), "--nproc-per-node", "1",
              "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", rdzv_id, "--max-restarts", "0", "--no-python",
              "/usr/bin/python3", "-S", "-c", WORKER, workers] for _ in range(w)]
    return run_agents(argvs, workers, ready, timeout)


def lockstep(w, launcher, tmp, timeout):
    port, workers = free_port(), os.path.join(tmp, "lw")
    open(workers, "w").close()
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(16))
    master, rdzv_id = free_port(), secrets.token_hex(4)
    argvs = [[launcher, "--framework", "pytorch", "--nnodes", str(w), "--node-rank", str(i),
              "--nproc-per-node", "1", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", rdzv_id, "--token-file", token,
              "--master-port", str(master), "--advertise-addr", "127.0.0.1",
              "--termination-log", os.path.join(tmp, f"term-{i}"),
              "--nccl-library", "/nonexistent/libnccl.so.2",
              "--", "/usr/bin/python3", "-S", "-c", WORKER, workers] for i in range(w)]
    return run_agents(argvs, workers, None, timeout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("--sizes", default="4,8,16")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    args.launcher = os.path.abspath(args.launcher)
    rows = []
    for w in [int(s) for s in args.sizes.split(",")]:
        got = {"lockstep": [], "torchrun": []}
        for rep in range(args.reps):
            with tempfile.TemporaryDirectory() as tmp:
                got["lockstep"].append(lockstep(w, args.launcher, tmp, args.timeout))
            with tempfile.TemporaryDirectory() as tmp:
                got["torchrun"].append(torchrun(w, tmp, args.timeout))
            print(f"W={w} rep={rep} lockstep e2e/rdzv {got['lockstep'][-1][0]:.0f}/"
                  f"{got['lockstep'][-1][1]:.0f} ms torchrun {got['torchrun'][-1][0]:.0f}/"
                  f"{got['torchrun'][-1][1]:.0f} ms load {os.getloadavg()[0]:.1f}",
                  file=sys.stderr, flush=True)
        rows.append((w, got))
    print("| W agents | lockstep rdzv ms | torchrun c10d rdzv ms | ratio | lockstep e2e ms |"
          " torchrun e2e ms | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for w, got in rows:
        med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in got.items()}
        print(f"| {w} | {med['lockstep'][1]:.0f} | {med['torchrun'][1]:.0f} | "
              f"{med['torchrun'][1] / med['lockstep'][1]:.1f}x | {med['lockstep'][0]:.0f} | "
              f"{med['torchrun'][0]:.0f} | {med['torchrun'][0] / med['lockstep'][0]:.1f}x |")


if __name__ == "__main__":
    main()
