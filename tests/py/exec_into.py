"""Run another program in this process (exec), once this one's Python is known.

usage: exec_into.py PROGRAM [ARGS...]

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), which is where gpubpf
record holds a process and looks for its Python, then replaces itself with
PROGRAM (os.execv: the same pid, a new interpreter).  For t0300: the stacks
of the new program's calls must be walked with the new interpreter's
layout, not the old one's.
"""
import ctypes
import os
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
ctypes.CDLL("libcuda.so.1")
os.execv(sys.argv[1], sys.argv[1:])
