"""Fork children that call CUDA without mapping libcuda themselves.

usage: fork_calls.py GO_FILE FORKS SYNCS

Loads libcuda.so.1, waits for GO_FILE to exist, then forks FORKS children,
one every 0.5 s.  Each child runs fork_at_pid.py's child(): calls cuInit,
waits 0.3 s, calls cuCtxSynchronize SYNCS times 10 ms apart (from one line)
and exits 0.  A child maps nothing: a tracer learns of it only from its
calls.  Prints each child's pid.  Exits 1 if a child did not exit 0.
"""
import ctypes
import os
import sys
import time

from fork_at_pid import child


def main():
    go, forks, syncs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lib = ctypes.CDLL("libcuda.so.1")
    while not os.path.exists(go):
        time.sleep(0.01)
    bad = 0
    for i in range(forks):
        start = time.monotonic()
        c = os.fork()
        if c == 0:
            child(lib, syncs)
            os._exit(0)
        print(c, flush=True)
        _, status = os.waitpid(c, 0)
        bad += status != 0
        time.sleep(max(0.0, start + 0.5 - time.monotonic()))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
