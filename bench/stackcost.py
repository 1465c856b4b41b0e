"""Per-call cost from a Python stack of known depth (bench/stack_bench.sh).

usage: stackcost.py DEPTH N
Recurses to DEPTH frames, then calls cuLaunchKernel of the bench libcuda
(LD_LIBRARY_PATH=build/bench) N times; prints ns_per_call=X.
"""
import ctypes
import sys
import time

lib = ctypes.CDLL("libcuda.so.1")
launch = lib.cuLaunchKernel


def bottom(n):
    args = (None, 1, 1, 1, 1, 1, 1, 0, None, None, None)
    for _ in range(200):            # warm-up: first calls resolve symbols
        launch(*args)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        launch(*args)
    return (time.perf_counter_ns() - t0) / n


def down(depth, n):
    if depth <= 1:
        return bottom(n)
    return down(depth - 1, n)


def main():
    depth, n = int(sys.argv[1]), int(sys.argv[2])
    # frames: <module>, main, down * (depth - 2), bottom
    print("ns_per_call=%.1f" % down(depth - 2, n))


if __name__ == "__main__":
    main()
