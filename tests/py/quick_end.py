"""A process that ends right after its last calls, each made from a
function not called before: a tracer names their frames from the
process's memory, which goes with it, so only in time if it holds the
process as it ends.

usage: quick_end.py exit|finalize|exec|worker [GO_FILE]

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), calls cuInit, then
waits 0.3 s (a tracer finds its Python), or until GO_FILE exists if given
(record -p attaches meanwhile).  Then:
  exit:     calls cuCtxSynchronize once from each of last0 ... last4 and
            ends at once with os._exit(7), as a multiprocessing worker ends;
  finalize: the same calls, then the script ends (exit 0): the interpreter
            finalizes first, freeing the code objects of the module's
            functions;
  exec:     the same calls, then os.execv into /bin/sh -c "exit 5": the
            program's memory goes at once;
  worker:   forks a child that does as "exit" does (its own cuInit and
            0.3 s first); the parent waits for it, then exits as it did.
"""
import ctypes
import os
import sys
import time

lib = None


def last0():
    lib.cuCtxSynchronize()  # LAST 0


def last1():
    lib.cuCtxSynchronize()  # LAST 1


def last2():
    lib.cuCtxSynchronize()  # LAST 2


def last3():
    lib.cuCtxSynchronize()  # LAST 3


def last4():
    lib.cuCtxSynchronize()  # LAST 4


def start(go):
    global lib
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuInit(0)
    if go:
        while not os.path.exists(go):
            time.sleep(0.01)
    else:
        time.sleep(0.3)


def calls():
    for f in (last0, last1, last2, last3, last4):
        f()


def main():
    mode, go = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
    if mode not in ("exit", "finalize", "exec", "worker"):
        sys.exit(__doc__)
    if mode == "worker":
        child = os.fork()
        if child == 0:
            start(go)
            calls()
            os._exit(7)
        _, status = os.waitpid(child, 0)
        sys.exit(os.WEXITSTATUS(status))
    start(go)
    calls()
    if mode == "exit":
        os._exit(7)
    if mode == "exec":
        os.execv("/bin/sh", ["sh", "-c", "exit 5"])


main()
