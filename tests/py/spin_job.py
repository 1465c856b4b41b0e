"""A Python job on the simulated driver whose one thread never blocks.

usage: spin_job.py LIBCUDA READY_FILE GO_FILE LAUNCHES TRUTH

It sets the driver up (no GPU work yet, so the driver has no worker
thread), writes READY_FILE, then spins in Python until GO_FILE exists:
late attach by ptrace finds no thread asleep at a safe point then, CPython
3.14+'s remote execution finds one between two bytecodes.  Then it
launches LAUNCHES kernels of 100 us, synchronises, writes sim/train.py's
--truth to TRUTH and prints one line.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim"))
import train  # noqa: E402


def main():
    lib, ready, go, launches, truth = sys.argv[1:6]
    drv = train.Driver(lib, False)
    drv.init()
    kernel = train.Kernel(drv, drv.load_module(), "spin_kernel")
    open(ready, "w").close()
    spins = 0
    while not os.path.exists(go):
        for _ in range(20000):
            spins += 1
    for _ in range(int(launches)):
        drv.launch(kernel, 100)
    drv.ctx_synchronize()
    drv.write_truth(truth)
    sys.stderr.write("spin_job: %d launches\n" % int(launches))


if __name__ == "__main__":
    main()
