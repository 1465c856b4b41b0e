"""CPU-bound Python threads for the sampler's costs (bench/sched_bench.sh).

usage: busy.py THREADS SECONDS
THREADS threads run pure Python at a stack 10 frames deep for SECONDS;
loads the bench libcuda (LD_LIBRARY_PATH) so that gpubpf finds a target.
"""
import ctypes
import sys
import threading
import time

ctypes.CDLL("libcuda.so.1")


def spin(until, depth=10):
    if depth > 1:
        return spin(until, depth - 1)
    n = 0
    while time.monotonic() < until:
        n += 1
    return n


def main():
    n, secs = int(sys.argv[1]), float(sys.argv[2])
    until = time.monotonic() + secs
    threads = [threading.Thread(target=spin, args=(until,)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
