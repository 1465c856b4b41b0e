#!/usr/bin/env python3
"""GPU idle time spent collecting garbage, for t0325 (simulated driver).

usage: LD_LIBRARY_PATH=build/sim gc_workload.py [--steps N] [--cycles N]

With the collector's automatic runs off (gc.disable()), it first builds
--cycles (default 300000) reference cycles that stay alive (a full
collection traverses them all), then, in each of --steps steps (default
3), launches a 100 us kernel, makes a few unreachable cycles
(make_garbage()) and calls gc.collect() in collect_garbage() at GC_LINE
before the next launch: the GPU runs dry while the collector runs, so the
host-bound time the thread spends on a CPU is mostly "gc" at GC_LINE.
"""
import argparse
import gc
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim"))
import train  # noqa: E402


def make_cycles(n):
    out = []
    for _ in range(n):
        a = []
        b = [a]
        a.append(b)
        out.append(a)
    return out


def make_garbage(n):
    make_cycles(n)


def collect_garbage():
    return gc.collect()                     # GC_LINE


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=300000)
    args = ap.parse_args()
    gc.disable()
    drv = train.Driver(None, False)
    drv.init()
    kernel = train.Kernel(drv, drv.load_module(), "compute")
    alive = make_cycles(args.cycles)
    for _ in range(args.steps):
        drv.launch(kernel, 100)
        make_garbage(100)
        collect_garbage()
    drv.launch(kernel, 100)
    drv.ctx_synchronize()
    return len(alive)


if __name__ == "__main__":
    main()
