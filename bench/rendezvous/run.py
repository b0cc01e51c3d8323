#!/usr/bin/env python3
"""Runs the rendezvous benchmark: lockstep's server (rdzv_bench) and torch's TCPStore
(tcpstore_bench.py) alternating in one run, and prints a markdown table of medians and the ratio.

  .venv/bin/python bench/rendezvous/run.py --bench build-launcher-rel/bin/rdzv_bench \
      --sizes 64,1024,8192 --reps 3 --torch-reps 3,1,1 [--nccl-library PATH]

--torch-reps limits TCPStore repetitions per size (it takes minutes at 1,024+ clients here).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    m = re.search(r"ms=([0-9.]+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr[-2000:]}")
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True)
    p.add_argument("--sizes", default="64,1024,8192")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--torch-reps", default="")
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--nccl-library", default="")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    torch_reps = ([int(r) for r in args.torch_reps.split(",")] if args.torch_reps
                  else [args.reps] * len(sizes))
    nccl = ["--nccl-library", args.nccl_library] if args.nccl_library else []
    rows = []
    for size, treps in zip(sizes, torch_reps):
        ours, theirs = [], []
        for rep in range(args.reps):
            ours.append(run([args.bench, "--clients", str(size), "--procs", str(args.procs)] + nccl))
            if rep < treps:
                theirs.append(run([sys.executable, os.path.join(HERE, "tcpstore_bench.py"),
                                   "--clients", str(size), "--procs", str(args.procs)] + nccl))
            print(f"W={size} rep={rep} lockstep={ours[-1]:.1f}ms "
                  f"tcpstore={theirs[-1] if rep < treps else '-'}", file=sys.stderr, flush=True)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        rows.append((size, mo, len(ours), mt, len(theirs), mt / mo))
    print("| W (clients) | lockstep median ms (n) | TCPStore libuv median ms (n) | speed-up |")
    print("|---:|---:|---:|---:|")
    for size, mo, no, mt, nt, ratio in rows:
        print(f"| {size} | {mo:.1f} ({no}) | {mt:.1f} ({nt}) | {ratio:.1f}x |")


if __name__ == "__main__":
    main()
