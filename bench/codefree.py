"""Code objects made and freed in a loop, for the cost of gb_py_code_free.

usage: codefree.py N

Calls the simulated libcuda.so.1 once (LD_LIBRARY_PATH) so that a recording
finds its Python, waits WAIT_S (0.5) seconds, then makes N code objects
(code.replace(), 3.8+), each freeing the one before, prints
ns_per_free=: the loop's time per code object, and waits WAIT_S again
(for a sampler of the hook's statistics).
"""
import ctypes
import os
import sys
import time


def f():
    pass


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    ctypes.CDLL("libcuda.so.1").cuCtxSynchronize()
    time.sleep(float(os.environ.get("WAIT_S", "0.5")))
    code = f.__code__
    c = None
    t0 = time.perf_counter_ns()
    for i in range(n):
        c = code.replace(co_firstlineno=i % 1000 + 1)
    t1 = time.perf_counter_ns()
    del c
    print("ns_per_free=%.1f" % ((t1 - t0) / n), flush=True)
    time.sleep(float(os.environ.get("WAIT_S", "0.5")))


if __name__ == "__main__":
    main()
