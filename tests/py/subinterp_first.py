"""Run a Python script in a process that has made a subinterpreter first.

usage: subinterp_first.py SCRIPT [ARGS...]

Makes a subinterpreter and keeps it (CPython lists interpreters newest
first: the main one is then last), runs a statement in it, then runs
SCRIPT in the main interpreter as python SCRIPT ARGS would.  On 3.12, making
the subinterpreter leaves the main thread a second thread state, in the
subinterpreter, that runs no Python.
"""
import runpy
import sys

try:
    import _interpreters as interpreters            # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters       # 3.8-3.12


def main():
    args = sys.argv[1:]
    sub = interpreters.create()
    run = getattr(interpreters, "run_string", None) or interpreters.exec
    run(sub, "x = 1")
    sys.argv = args
    try:
        runpy.run_path(args[0], run_name="__main__")
    finally:
        interpreters.destroy(sub)


if __name__ == "__main__":
    main()
