#!/usr/bin/env python3
"""A training loop that recomputes one kernel on the same inputs every step,
for `gpubpf report`'s repeated_work finding (simulated driver).

    LD_LIBRARY_PATH=build/sim python3 tests/py/repeat_workload.py

Drives the driver through sim/site-packages/simcuda.py (as
findings_workload.py does, so each launch's innermost user frame is a
line of this file).  Its kernels
declare their parameters in their names ("name(u32,ptr,...)"), so the
simulated driver describes them (cuFuncGetParamInfo) and gpubpf hashes
each launch's arguments.  Each of --steps iterations of main()'s loop:
  forward   3 x linear (400 us), each on its own layer's weights (the same
            pointers every step, as a real model's)
  loss      softmax (500 us) of the logits, launched by the CUkernel handle
            of a library (cuLibraryGetKernel), as CUDA 12's runtime may: its
            parameters are asked with cuKernelGetParamInfo
  metrics   softmax of the same logits again, same grid: a repeat
            (REPEAT_LINE), then softmax of them on another grid: not one
  log       norm (50 us) twice on one buffer, but a kernel whose name
            declares nothing: its arguments are not known, never a repeat
  step      sgd (100 us) twice, on each of two parameter buffers
One repeated_work finding: softmax at REPEAT_LINE, (steps - 1) x 500 us
(steps are counted between the first launches of two iterations).
"""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim",
                                "site-packages"))
import simcuda  # noqa: E402

LOGITS, LABELS = 0x7f0000100000, 0x7f0000200000
WEIGHTS = [0x7f0000300000 + 0x10000 * i for i in range(3)]
PARAMS = [0x7f0000400000, 0x7f0000500000]


class LibraryKernel(object):
    """A kernel of a library (cuLibraryLoadData, cuLibraryGetKernel), launched by its CUkernel."""

    def __init__(self, drv, name):
        lib, kern = ctypes.c_void_p(), ctypes.c_void_p()
        image = ctypes.create_string_buffer(b"\x7fELF simulated cubin", 64)
        if (drv.lib.cuLibraryLoadData(ctypes.byref(lib), image, None, None, 0, None, None, 0) or
                drv.lib.cuLibraryGetKernel(ctypes.byref(kern), lib, name.encode())):
            raise RuntimeError("cannot get library kernel " + name)
        self.name, self.handle = name, kern.value


def forward(drv, k):
    for w in WEIGHTS:
        drv.launch(k["linear"], 400, args=(w, LOGITS))


def loss(drv, k):
    drv.launch(k["softmax_lib"], 500, grid=(64, 1, 1), args=(LOGITS, LABELS))


def metrics(drv, k):
    drv.launch(k["softmax"], 500, grid=(64, 1, 1), args=(LOGITS, LABELS))  # REPEAT_LINE
    drv.launch(k["softmax"], 500, grid=(32, 1, 1), args=(LOGITS, LABELS))


def step(drv, k):
    for p in PARAMS:
        drv.launch(k["sgd"], 100, args=(p,))


def log(drv, k):
    drv.launch(k["norm"], 50)
    drv.launch(k["norm"], 50)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    o = p.parse_args()
    drv = simcuda.Driver(None, False)
    drv.init()
    mod = drv.load_module()
    k = {"linear": simcuda.Kernel(drv, mod, "linear(u32,ptr,ptr)"),
         "softmax": simcuda.Kernel(drv, mod, "softmax(u32,ptr,ptr)"),
         "softmax_lib": LibraryKernel(drv, "softmax(u32,ptr,ptr)"),
         "sgd": simcuda.Kernel(drv, mod, "sgd(u32,ptr)"),
         "norm": simcuda.Kernel(drv, mod, "norm")}
    for _ in range(o.steps):
        forward(drv, k)
        loss(drv, k)
        metrics(drv, k)
        log(drv, k)
        step(drv, k)
    drv.ctx_synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
