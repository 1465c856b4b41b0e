"""Python called back from a thread of C code, which then calls the driver.

usage: callbacks.py LIBWORKPOOL N

tests/py/workpool.c's wp_callbacks() starts a C thread ("wp_cb") that, once
200 ms old, calls callback() N times, 2 ms apart; ctypes gives the thread a
Python thread state for each call and deletes it after.  Each call makes
one cuCtxSynchronize, whose stack is callback's line.
"""
import ctypes
import sys

lib = ctypes.CDLL("libcuda.so.1")


def callback(i):
    lib.cuCtxSynchronize()  # CALLBACK'S CALL


def main():
    lib.cuInit(0)
    pool = ctypes.CDLL(sys.argv[1])
    n = int(sys.argv[2])
    cb = ctypes.CFUNCTYPE(None, ctypes.c_int)(callback)
    if pool.wp_callbacks(cb, n):
        sys.exit("callbacks: cannot start the thread")


if __name__ == "__main__":
    main()
