"""Run another program in this process (exec), once this one's Python is known.

usage: exec_into.py [--wait-file FILE] PROGRAM [ARGS...]

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), which is where gpubpf
record holds a process and looks for its Python, then replaces itself with
PROGRAM (os.execv: the same pid, a new interpreter); with --wait-file, once
FILE exists (a process for record -p to attach to first).  For t0300: the
stacks of the new program's calls must be walked with the new
interpreter's layout, not the old one's.
"""
import ctypes
import os
import sys
import time

args = sys.argv[1:]
wait_file = None
if args[:1] == ["--wait-file"] and len(args) >= 2:
    wait_file, args = args[1], args[2:]
if not args:
    sys.exit(__doc__)
ctypes.CDLL("libcuda.so.1")
while wait_file and not os.path.exists(wait_file):
    time.sleep(0.01)
os.execv(args[0], args)
