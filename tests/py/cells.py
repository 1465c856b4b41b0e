"""Notebook cells: code compiled and run one after another, each freed
before the next is made, for the identity of code objects over time.

usage: cells.py N same|varied|onefile

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH) and runs N cells, each
its own code compiled as from a file "cellK.py" (K from 0) and run by exec
from one function, as a notebook runs them: a cell calls cuCtxSynchronize
once, at its top level.  Prints the address of each cell's code object.
"same": every cell has the same source (only its file's name differs);
"varied": cell K has K blank lines first, so its call is on line K + 2.
"onefile": as varied, every cell compiled as from one file, "cell.py" (as
exec compiles code as from "<string>").
CPython mostly gives a cell's code object, and its frame, the addresses of
the cell's before.  Cells are 50 ms apart (a notebook's are seconds): a
tracer names a cell's frame from the code object, freed as the cell ends,
before the next cell's takes its place.
"""
import ctypes
import sys
import time

SOURCE = "x = 1\nlib.cuCtxSynchronize()\n"


def run_cell(lib, k, shape):
    code = compile("\n" * k * (shape != "same") + SOURCE,
                   "cell.py" if shape == "onefile" else "cell%d.py" % k, "exec")
    exec(code, {"lib": lib})
    print(hex(id(code)), flush=True)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("same", "varied", "onefile"):
        sys.exit(__doc__)
    lib = ctypes.CDLL("libcuda.so.1")
    for k in range(int(sys.argv[1])):
        run_cell(lib, k, sys.argv[2])
        time.sleep(0.05)


if __name__ == "__main__":
    main()
