"""Load libcuda only when told: a job to be held as it maps libcuda.

usage: load_later.py GO LIB [DONE]

Waits until the file GO exists, then loads LIB (a libcuda: the moment a
recorder holds the process), prints "cuInit N" with cuInit's result and,
given DONE, waits until that file exists before exiting.
"""
import ctypes
import os
import sys
import time


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def main():
    wait_for(sys.argv[1])
    lib = ctypes.CDLL(sys.argv[2])
    print("cuInit", lib.cuInit(0), flush=True)
    if len(sys.argv) > 3:
        wait_for(sys.argv[3])


if __name__ == "__main__":
    main()
