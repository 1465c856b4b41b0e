"""One program, and its twin under another name: for stack ids across programs.

usage: twin.py NAME N [CMD...]

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), makes a function NAME
from one template (its code compiled as from a file "NAME.py"), calls
cuCtxSynchronize N times from it, 10 ms apart, prints the address of its
code object and its pid to stdout, then runs CMD in its place (exec, the
same pid) if one is given.  Run without ASLR (setarch -R) under two names of
one length, the two programs' code objects lie at the same addresses, so a
walker that keys stacks by what it reads from memory alone gives the twin
the first program's names.
"""
import ctypes
import os
import sys
import time

TEMPLATE = """
def NAME(lib, n):
    for _ in range(n):
        lib.cuCtxSynchronize()
        time.sleep(0.01)
"""


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    name, n, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    lib = ctypes.CDLL("libcuda.so.1")
    scope = {"time": time}
    exec(compile(TEMPLATE.replace("NAME", name), name + ".py", "exec"), scope)
    scope[name](lib, n)
    print(hex(id(scope[name].__code__)), os.getpid(), flush=True)
    if cmd:
        os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
