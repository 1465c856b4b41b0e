"""Forked workers that make a few driver calls at once and end.

usage: fork_workers.py WORKERS CALLS

Loads libcuda.so.1 and makes no call itself (a parent that set CUDA up
could not fork workers that use it), then forks WORKERS children one after
another.  Each calls cuInit and then cuCtxSynchronize CALLS times from one
line, with no pause, and ends with os._exit(0): it is gone before a tracer
could look at it.  Exits 1 if a worker did not exit 0.
"""
import ctypes
import os
import sys


def work(lib, calls):
    lib.cuInit(0)  # THE WORKER'S INIT
    for _ in range(calls):
        lib.cuCtxSynchronize()  # THE WORKER'S CALL


def main():
    workers, calls = int(sys.argv[1]), int(sys.argv[2])
    lib = ctypes.CDLL("libcuda.so.1")
    bad = 0
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            work(lib, calls)
            os._exit(0)
        bad |= os.waitpid(pid, 0)[1] != 0
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
