"""Python called back from a thread of C code, which then calls the driver.

usage: callbacks.py LIBWORKPOOL N [contend|unbound|unbound_idle|freed]

tests/py/workpool.c's wp_callbacks() starts a C thread ("wp_cb") that, once
200 ms old, calls callback() N times, 2 ms apart; ctypes gives the thread a
Python thread state for each call and deletes it after.  Each call makes
one cuCtxSynchronize, whose stack is callback's line.
contend: meanwhile a Python thread spins, holding the GIL for 10 ms at a
time, so that each call's new state waits for the GIL, made but running no
Python yet, and is walked there (the thread blocks).
unbound: tests/py/workpool.c's wp_unbound() instead, whose thread makes
each state as CPython 3.12+ does, in the thread list before it has the
thread's id, and is walked between the two; it calls made(); exits 77 where
the interpreter does not export what that takes (only 3.12 does).
unbound_idle: tests/py/workpool.c's wp_unbound_idle() instead, as unbound
but its thread first holds a state that runs no Python, deleted once the
new one is bound; exits 77 as unbound does.
freed: tests/py/workpool.c's wp_freed() instead, whose thread is walked
holding a state that runs no Python, deletes it and calls made() in a new
one (at another address); exits 77 where what that takes is not exported.
"""
import ctypes
import sys
import threading

lib = ctypes.CDLL("libcuda.so.1")


def callback(i):
    lib.cuCtxSynchronize()  # CALLBACK'S CALL


def made():
    lib.cuCtxSynchronize()  # MADE'S CALL


def spin(done):
    while not done:
        pass


def main():
    lib.cuInit(0)
    pool = ctypes.CDLL(sys.argv[1])
    n = int(sys.argv[2])
    cb = ctypes.CFUNCTYPE(None, ctypes.c_int)(callback)
    done = []
    if sys.argv[3:] in (["unbound"], ["unbound_idle"], ["freed"]):
        run = getattr(pool, "wp_" + sys.argv[3])
        run.argtypes = [ctypes.py_object, ctypes.c_int]
        rc = run(made, n)
        if rc == -2:
            sys.exit(77)
        if rc:
            sys.exit("callbacks: cannot start the thread")
        return
    if sys.argv[3:] == ["contend"]:
        sys.setswitchinterval(0.01)
        threading.Thread(target=spin, args=(done,)).start()
    rc = pool.wp_callbacks(cb, n)
    done.append(1)
    if rc:
        sys.exit("callbacks: cannot start the thread")


if __name__ == "__main__":
    main()
