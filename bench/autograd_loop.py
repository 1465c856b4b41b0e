#!/usr/bin/env python3
"""A CPU PyTorch loop for bench/autograd_bench.sh: each step runs OPS
elementwise ops on a small tensor (each makes an autograd node) and
backward through them, on one thread; no driver call inside the loop.  It loads the
driver (libcuda.so.1, the simulated one under LD_LIBRARY_PATH) and calls
cuInit first, as a CUDA job would, so that gpubpf traces it.

    autograd_loop.py STEPS OPS
        -> prints "ns_per_step=N cpu_ns_per_step=C": wall and thread CPU time
           (the kernel's probe handling is the thread's system time)
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
    torch.set_num_threads(1)    # no intra-op pool: one thread, steadier times
    x = torch.rand(16, requires_grad=True)
    w = torch.rand(16, requires_grad=True)
    for _ in range(steps // 10):        # warm-up
        step(x, w, ops)
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(steps):
        step(x, w, ops)
    c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
    print("ns_per_step=%d cpu_ns_per_step=%d" % ((t1 - t0) // steps, (c1 - c0) // steps))


if __name__ == "__main__":
    main()
