"""A Python job on the simulated driver in which no thread blocks and the
main thread runs no bytecode.

usage: gil_job.py LIBCUDA READY_FILE SECONDS

After cuInit (the driver starts no thread of its own for that), a second
thread spins in Python, holding the GIL, while the main thread spends
SECONDS in one C call that released it (hashlib.pbkdf2_hmac, no system
call).  READY_FILE gets the second thread's id.  Late attach by ptrace
finds no thread asleep; for CPython's remote execution, the thread to ask
is the second one: the main thread would reach no safe point in time.
"""
import ctypes
import hashlib
import os
import sys
import threading
import time


def main():
    lib, ready, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    ctypes.CDLL(lib).cuInit(0)
    t0 = time.monotonic()
    hashlib.pbkdf2_hmac("sha256", b"x", b"salt", 100000)
    rate = 100000 / (time.monotonic() - t0)
    done = []

    def spin():
        n = 0
        while not done:
            for _ in range(20000):
                n += 1

    spinner = threading.Thread(target=spin, name="spinner")
    spinner.start()
    with open(ready + ".part", "w") as f:
        f.write("%d\n" % spinner.native_id)
    os.rename(ready + ".part", ready)
    hashlib.pbkdf2_hmac("sha256", b"x", b"salt", int(rate * seconds))
    done.append(1)
    spinner.join()
    sys.stderr.write("gil_job: done\n")


if __name__ == "__main__":
    main()
