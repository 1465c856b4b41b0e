#!/usr/bin/env python3
"""A CPU PyTorch loop for bench/autograd_bench.sh: each step runs OPS
elementwise ops on a small tensor (each makes an autograd node) and
backward through them; no driver call inside the loop.  It loads the
driver (libcuda.so.1, the simulated one under LD_LIBRARY_PATH) and calls
cuInit first, as a CUDA job would, so that gpubpf traces it.

    autograd_loop.py STEPS OPS    -> prints "ns_per_step=N"
"""
import ctypes
import sys
import time

import torch


def step(x, w, ops):
    y = x
    for _ in range(ops):
        y = y * w
    y.sum().backward()


def main():
    steps, ops = int(sys.argv[1]), int(sys.argv[2])
    ctypes.CDLL("libcuda.so.1").cuInit(0)
    x = torch.rand(16, requires_grad=True)
    w = torch.rand(16, requires_grad=True)
    for _ in range(steps // 10):        # warm-up
        step(x, w, ops)
    t0 = time.perf_counter_ns()
    for _ in range(steps):
        step(x, w, ops)
    print("ns_per_step=%d" % ((time.perf_counter_ns() - t0) // steps))


if __name__ == "__main__":
    main()
