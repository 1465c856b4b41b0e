"""Run a Python script in a process that has started many threads first.

usage: threads_first.py N SCRIPT [ARGS...]

Starts N Python threads that wait on an event (each has a thread state,
newer than the main thread's: CPython lists states newest first, so the
main thread's is then last of N+1), runs SCRIPT as python SCRIPT ARGS
would, then lets the threads end.
"""
import runpy
import sys
import threading


def main():
    n, args = int(sys.argv[1]), sys.argv[2:]
    done = threading.Event()
    threads = [threading.Thread(target=done.wait) for _ in range(n)]
    for t in threads:
        t.start()
    sys.argv = args
    try:
        runpy.run_path(args[0], run_name="__main__")
    finally:
        done.set()
        for t in threads:
            t.join()


if __name__ == "__main__":
    main()
