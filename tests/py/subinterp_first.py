"""Run a Python script in a process that has made a subinterpreter first.

usage: subinterp_first.py [--wait-file F] SCRIPT [ARGS...]

Makes a subinterpreter and keeps it (CPython lists interpreters newest
first: the main one is then last), runs a statement in it, then runs
SCRIPT in the main interpreter as python SCRIPT ARGS would.  With
--wait-file, it first loads libcuda.so.1 (a process to attach to with -p
once that is mapped) and sleeps in Python until F exists.  On 3.12, making
the subinterpreter leaves the main thread a second thread state, in the
subinterpreter, that runs no Python.
"""
import ctypes
import os
import runpy
import sys
import time

try:
    import _interpreters as interpreters            # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters       # 3.8-3.12


def main():
    args = sys.argv[1:]
    wait = None
    if args[:1] == ["--wait-file"]:
        wait, args = args[1], args[2:]
    sub = interpreters.create()
    run = getattr(interpreters, "run_string", None) or interpreters.exec
    run(sub, "x = 1")
    if wait:
        ctypes.CDLL("libcuda.so.1")
    while wait and not os.path.exists(wait):
        time.sleep(0.01)
    sys.argv = args
    try:
        runpy.run_path(args[0], run_name="__main__")
    finally:
        interpreters.destroy(sub)


if __name__ == "__main__":
    main()
