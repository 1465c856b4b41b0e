#!/usr/bin/env python3
"""GPU idle time spent collecting garbage, for t0330 (simulated driver).

usage: LD_LIBRARY_PATH=build/sim gc_workload.py [--steps N] [--cycles N]

With the collector's automatic runs off (gc.disable()), each of --steps
steps (default 3) launches a kernel about as long as making --cycles
(default 200000) unreachable reference cycles takes (make_garbage(): the
time the first such batch took), makes them, then calls gc.collect() in
collect_garbage() at GC_LINE, and then launches the next kernel: the GPU
runs dry while the collector runs, so the report's host-bound time of
each step is mostly "gc" at GC_LINE.
"""
import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim"))
import train  # noqa: E402


def make_garbage(n):
    for _ in range(n):
        a = []
        b = [a]
        a.append(b)


def collect_garbage():
    return gc.collect()                     # GC_LINE


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=200000)
    args = ap.parse_args()
    gc.disable()
    drv = train.Driver(None, False)
    drv.init()
    kernel = train.Kernel(drv, drv.load_module(), "compute")
    t = time.monotonic()
    make_garbage(args.cycles)
    cover_us = int(1e6 * (time.monotonic() - t))
    collect_garbage()
    for _ in range(args.steps):
        drv.launch(kernel, cover_us)
        make_garbage(args.cycles)
        collect_garbage()
    drv.launch(kernel, 100)
    drv.ctx_synchronize()


if __name__ == "__main__":
    main()
