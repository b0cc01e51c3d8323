#!/usr/bin/env python3
"""Runs the rendezvous benchmark: lockstep's server (rdzv_bench) and torch's TCPStore
(tcpstore_bench.py) alternating in one run, and prints a markdown table of medians and the ratio.

  .venv/bin/python bench/rendezvous/run.py --bench build-launcher-rel/bin/rdzv_bench \
      --sizes 64,1024,8192 --reps 3 --torch-reps 3,1,1 [--nccl-library PATH]

--torch-reps limits TCPStore repetitions per size.
--agent-sizes 4,8,16 then also runs torchrun_bench.py: torchrun's c10d rendezvous with W agent
processes vs W lockstep-launcher processes (--launcher).

Every torch process runs with the reverse lookup of ::ffff:127.0.0.1 answered from a hosts file
(no_dns_stall): torch's socket code names each peer with getnameinfo, which for the v4-mapped
loopback address misses /etc/hosts and asks DNS; this machine's resolver drops about one query in
26 and glibc waits its 5 s timeout, a stall no cluster with a working resolver shows.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def no_dns_stall(cmd):
    """cmd in a private mount namespace whose /etc/hosts also maps ::ffff:127.0.0.1 (as root;
    otherwise cmd as it is, with a warning)."""
    if os.geteuid() != 0:
        print("warning: not root: torch's reverse lookups go to DNS", file=sys.stderr)
        return cmd
    hosts = os.path.join(tempfile.gettempdir(), f"rdzv-bench-hosts-{os.getpid()}")
    if not os.path.exists(hosts):
        with open("/etc/hosts") as f:
            text = f.read()
        with open(hosts, "w") as f:
            f.write(text.rstrip("\n") + "\n::ffff:127.0.0.1 localhost\n")
    return ["unshare", "--mount", "sh", "-c", f'mount --bind {hosts} /etc/hosts && exec "$@"',
            "sh"] + cmd


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    m = re.search(r"ms=([0-9.]+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr[-2000:]}")
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", default="", help="rdzv_bench (needed when --sizes is not empty)")
    p.add_argument("--sizes", default="64,1024,8192")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--torch-reps", default="")
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--nccl-library", default="")
    p.add_argument("--agent-sizes", default="")
    p.add_argument("--agent-reps", type=int, default=3)
    p.add_argument("--launcher", default="")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if sizes and not args.bench:
        p.error("--bench is needed for --sizes")
    torch_reps = ([int(r) for r in args.torch_reps.split(",")] if args.torch_reps
                  else [args.reps] * len(sizes))
    nccl = ["--nccl-library", args.nccl_library] if args.nccl_library else []
    rows = []
    for size, treps in zip(sizes, torch_reps):
        ours, theirs = [], []
        for rep in range(args.reps):
            ours.append(run([args.bench, "--clients", str(size), "--procs", str(args.procs)] + nccl))
            if rep < treps:
                theirs.append(run(no_dns_stall(
                    [sys.executable, os.path.join(HERE, "tcpstore_bench.py"),
                     "--clients", str(size), "--procs", str(args.procs)] + nccl)))
            print(f"W={size} rep={rep} lockstep={ours[-1]:.1f}ms "
                  f"tcpstore={theirs[-1] if rep < treps else '-'}", file=sys.stderr, flush=True)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        rows.append((size, mo, len(ours), mt, len(theirs), mt / mo))
    if rows:
        print("| W (clients) | lockstep median ms (n) | TCPStore libuv median ms (n) | speed-up |")
        print("|---:|---:|---:|---:|")
    for size, mo, no, mt, nt, ratio in rows:
        print(f"| {size} | {mo:.1f} ({no}) | {mt:.1f} ({nt}) | {ratio:.1f}x |")
    if args.agent_sizes:
        sys.stdout.flush()
        subprocess.run(no_dns_stall([sys.executable, os.path.join(HERE, "torchrun_bench.py"),
                                     "--launcher", args.launcher, "--sizes", args.agent_sizes,
                                     "--reps", str(args.agent_reps)]), check=True)


if __name__ == "__main__":
    main()
