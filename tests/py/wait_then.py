"""Load the driver, wait, then run a Python script: a job to attach to with -p.

usage: wait_then.py [--init] FILE SCRIPT [ARGS...]

Loads libcuda.so.1 (--init: and calls cuInit, which loads the injection
library CUDA_INJECTION64_PATH names), sleeps in Python until FILE exists,
then runs SCRIPT as python SCRIPT ARGS would.  A test attaches once
libcuda is mapped, makes FILE when gpubpf says "recording", and expects
the script's calls and GPU work from its first call.
"""
import ctypes
import os
import runpy
import sys
import time


def main():
    args = sys.argv[1:]
    init = args[:1] == ["--init"]
    if init:
        args = args[1:]
    wait, args = args[0], args[1:]
    lib = ctypes.CDLL("libcuda.so.1")
    if init:
        lib.cuInit(0)
    while not os.path.exists(wait):
        time.sleep(0.01)
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
