#!/usr/bin/env python3
"""torch TCPStore (libuv server) doing the rendezvous equivalent of rdzv_bench, for comparison.

W clients (spread over --procs processes, forked before the clock starts) each connect, register
one key (and bump a counter the master polls), then read one broadcast key that the master sets once all W registered (standing in for
rank 0 publishing the NCCL unique id, generated with ncclGetUniqueId when --nccl-library is
given). Prints one line: "tcpstore clients=W ms=T".
"""
import argparse
import ctypes
import multiprocessing as mp
import os
import resource
import time
from datetime import timedelta


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def worker(port, first, count, ready, go, done, release):
    from torch.distributed import TCPStore
    raise_fd_limit()
    ready.put(1)  # torch imported: the clock must not include that
    go.wait()
    stores = []
    for rank in range(first, first + count):
        store = TCPStore("127.0.0.1", port.value, is_master=False,
                         timeout=timedelta(seconds=60), wait_for_workers=False)
        store.set(f"rank/{rank}", "127.0.0.1")
        store.add("joined", 1)
        stores.append(store)
    # Poll rather than block: a blocking WAIT on a missing key is woken late by the libuv
    # server here (~10 s), which would make TCPStore look worse than its best use.
    while stores and not stores[0].check(["nccl_id"]):
        time.sleep(0.001)
    for store in stores:
        store.get("nccl_id")
    done.put(1)
    release.wait()


def nccl_id(library):
    if not library:
        return os.urandom(128)
    lib = ctypes.CDLL(library)
    buf = ctypes.create_string_buffer(128)
    if lib.ncclGetUniqueId(buf) != 0:
        raise RuntimeError("ncclGetUniqueId failed")
    return buf.raw


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--nccl-library", default="")
    args = p.parse_args()
    raise_fd_limit()
    ctx = mp.get_context("fork")
    port, go, release = ctx.Value("i", 0), ctx.Event(), ctx.Event()
    ready, done = ctx.Queue(), ctx.Queue()
    procs = []
    for i in range(args.procs):
        first = args.clients * i // args.procs
        last = args.clients * (i + 1) // args.procs
        proc = ctx.Process(target=worker, args=(port, first, last - first, ready, go, done,
                                                     release))
        proc.start()
        procs.append(proc)
    from torch.distributed import TCPStore
    master = TCPStore("127.0.0.1", 0, is_master=True, use_libuv=True, wait_for_workers=False,
                      timeout=timedelta(seconds=60))
    port.value = master.port
    for _ in procs:
        ready.get(timeout=600)
    start = time.perf_counter()
    go.set()
    # Like torch's own store init: poll a counter the clients increment.
    while master.add("joined", 0) < args.clients:
        time.sleep(0.001)
    master.set("nccl_id", nccl_id(args.nccl_library))
    for _ in procs:
        done.get(timeout=900)
    ms = (time.perf_counter() - start) * 1000
    release.set()
    for proc in procs:
        proc.join()
    print(f"tcpstore clients={args.clients} ms={ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
