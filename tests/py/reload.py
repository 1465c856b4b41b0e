"""A module edited and reloaded between calls, as a notebook's autoreload
reloads one, for the identity of code objects over time.

usage: reload.py DIR N

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), then N times writes
DIR/edited.py, reloads it and calls its step(), which calls
cuCtxSynchronize once.  The module's two versions alternate: the same
function, the same size, its call on line 3 (even turns) or line 2 (odd
turns).  The old version's code objects are freed at each reload, and
CPython mostly makes the new ones where they were.  Prints, for each turn,
the line of its call and the address of step's code object.
"""
import ctypes
import importlib
import os
import sys
import time

VERSIONS = (
    "def step(lib):\n    x = 1\n    lib.cuCtxSynchronize()\n    return x\n",
    "def step(lib):\n    lib.cuCtxSynchronize()\n    x = 1\n    return x\n",
)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    where, n = sys.argv[1], int(sys.argv[2])
    sys.dont_write_bytecode = True      # a .pyc of the same size and second would be taken
    sys.path.insert(0, where)
    lib = ctypes.CDLL("libcuda.so.1")
    mod = None
    for k in range(n):
        with open(os.path.join(where, "edited.py"), "w") as f:
            f.write(VERSIONS[k % 2])
        mod = importlib.reload(mod) if mod else importlib.import_module("edited")
        mod.step(lib)
        print(3 - k % 2, hex(id(mod.step.__code__)), flush=True)
        time.sleep(0.01)


if __name__ == "__main__":
    main()
