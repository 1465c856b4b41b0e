# SPDX-License-Identifier: BSD-2-Clause
"""Worker threads without Python launching for a Python thread (t0330).

usage: workers.py LIBWORKPOOL STEPS [PAUSE_S]

Loads tests/py/workpool.c's library with ctypes: a thread nobody wakes
launches first ("wp_lone"), then each step launches 2 kernels itself
(forward) and hands 3 to worker wp_a on the line marked HAND-OVER and
waits (backward); wp_a wakes wp_b for 2 more.
Steps are PAUSE_S apart (default 0.01, so the workers are asleep when the
work comes; bench/wake_bench.sh runs it with 0).
"""
import ctypes
import sys
import time


def forward(pool):
    pool.wp_forward(2)


def backward(pool):
    pool.wp_run(3)  # HAND-OVER


def main():
    pool = ctypes.CDLL(sys.argv[1])
    pool.wp_start.argtypes = [ctypes.c_char_p]
    if pool.wp_start(b"libcuda.so.1") or pool.wp_lone(4):
        sys.exit("workers: cannot start the pool")
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.01
    for _ in range(int(sys.argv[2])):
        time.sleep(pause)
        forward(pool)
        backward(pool)
    pool.wp_stop()
    print("workers: done")


if __name__ == "__main__":
    main()
