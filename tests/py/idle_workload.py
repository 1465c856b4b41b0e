#!/usr/bin/env python3
"""A job that goes idle between two bursts of launches, for t0405.

usage: LD_LIBRARY_PATH=build/sim idle_workload.py DIR [--launches N]

Launches N (default 200) 10 us kernels, synchronises, creates DIR/idle,
then makes no driver call (sleeping 10 ms at a time) until DIR/go
exists; then launches N more, synchronises, and prints the number of
launches made.  A recorder attached and detached while it idles sees no
driver call until DIR/go.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim"))
import train  # noqa: E402


def burst(drv, kernel, n):
    for _ in range(n):
        drv.launch(kernel, 10)
    drv.ctx_synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--launches", type=int, default=200)
    args = ap.parse_args()
    drv = train.Driver(None, False)
    drv.init()
    kernel = train.Kernel(drv, drv.load_module(), "compute")
    burst(drv, kernel, args.launches)
    open(os.path.join(args.dir, "idle"), "w").close()
    while not os.path.exists(os.path.join(args.dir, "go")):
        time.sleep(0.01)
    burst(drv, kernel, args.launches)
    print(2 * args.launches)


if __name__ == "__main__":
    main()
