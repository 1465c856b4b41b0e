"""A job that hangs in a sync: for t0196.

usage: hang_sync.py READY SECONDS

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), makes a launch and a
sync, starts a thread that sleeps (at the line marked "the sleeper"),
writes its pid to READY, waits for READY.go, creates READY.hangs, then
launches a kernel of SECONDS and waits for it in cuCtxSynchronize, at the
line marked "the hang".
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "sim", "site-packages"))
from simcuda import Driver, Kernel  # noqa: E402


def sleeper():
    time.sleep(3600)  # the sleeper


def main():
    ready, secs = sys.argv[1], float(sys.argv[2])
    d = Driver(None, False)
    d.init()
    k = Kernel(d, d.load_module(), "linear_fwd")
    d.launch(k, 10)
    d.ctx_synchronize()
    threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ready + ".tmp", ready)
    while not os.path.exists(ready + ".go"):
        time.sleep(0.02)
    open(ready + ".hangs", "w").close()
    d.launch(k, int(secs * 1e6))
    d.ctx_synchronize()  # the hang


if __name__ == "__main__":
    main()
