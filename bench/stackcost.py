"""Per-call cost from a Python stack of known depth (bench/sched_bench.sh).

usage: stackcost.py DEPTH N
Calls cuLaunchKernel of the bench libcuda (LD_LIBRARY_PATH names its
directory) N times from a stack of exactly DEPTH Python frames (1: from
the module's own code); prints ns_per_call=X (wall clock) and, on the next
line, cpu_ns_per_call=Y (the thread's CPU time).
"""
import ctypes
import sys
import time

lib = ctypes.CDLL("libcuda.so.1")
launch = lib.cuLaunchKernel
ARGS = (None, 1, 1, 1, 1, 1, 1, 0, None, None, None)


def bottom(n):
    for _ in range(200):            # warm-up: first calls resolve symbols
        launch(*ARGS)
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(n):
        launch(*ARGS)
    return (time.perf_counter_ns() - t0) / n, (time.thread_time_ns() - c0) / n


def down(depth, n):
    if depth <= 1:
        return bottom(n)
    return down(depth - 1, n)


def main(depth, n):
    # frames: <module>, main, down * (depth - 3), bottom
    return down(depth - 3, n) if depth > 3 else bottom(n)


DEPTH, N = int(sys.argv[1]), int(sys.argv[2])
if DEPTH == 1:
    for _ in range(200):
        launch(*ARGS)
    T0, C0 = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(N):
        launch(*ARGS)
    WALL, CPU = (time.perf_counter_ns() - T0) / N, (time.thread_time_ns() - C0) / N
elif DEPTH >= 3:
    WALL, CPU = main(DEPTH, N)
else:
    sys.exit("stackcost.py: DEPTH is 1 or at least 3")
print("ns_per_call=%.1f\ncpu_ns_per_call=%.1f" % (WALL, CPU))
