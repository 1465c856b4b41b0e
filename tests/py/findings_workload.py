#!/usr/bin/env python3
"""A training loop with known problems, for `gpubpf report`'s findings (simulated driver).

    LD_LIBRARY_PATH=build/sim python3 tests/py/findings_workload.py

Drives the driver through sim/site-packages/simcuda.py, the simulated
job's binding: its frames are library code, as a framework's are, so each
launch's innermost user frame is a line of this file.  All on the default stream; each of --steps iterations of main()'s
loop:
  load_batch  a slow collate: 20 ms of host time, then normalize (300 us)
  forward     3 x fwd (1500 us)
  loss_item   `.item()`: a synchronous 4-byte cuMemcpyDtoH_v2, blocked
              ~4.5 ms while forward runs, then 4 ms of logging: the GPU
              idles 4 ms after the sync, all of it the sync's (without it,
              the logging would have overlapped forward)
  backward    3 x bwd (1000 us)
  allreduce   ncclDevKernel_AllReduce_Sum_f32_RING_LL (3000 us) on the
              compute stream, nothing beside it: serialised communication
  step        the optimizer: sgd (100 us)
  postprocess a reshape (2000 us) after the optimizer step: wasted work
The GPU has about 8 ms of work queued when the next collate starts, so
it idles about 12 ms a step before normalize: host-bound.
Findings, costliest first: host_bound at LOAD_LINE (~12 ms a step), sync
at ITEM_LINE (~4 ms), serialised_comm at COMM_LINE (3 ms), wasted_work at
the loop's postprocess line, TAIL_LINE (2 ms a step, 5 steps).
"""
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim",
                                "site-packages"))
import simcuda  # noqa: E402

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def load_batch(drv, k):
    time.sleep(0.020)                       # the slow collate
    drv.launch(k["normalize"], 300)         # LOAD_LINE


def forward(drv, k):
    for _ in range(3):
        drv.launch(k["fwd"], 1500)


def loss_item(drv, buf):
    out = ctypes.c_float(0.0)
    drv.memcpy_dtoh(ctypes.addressof(out), buf, 4)  # ITEM_LINE
    time.sleep(0.004)                       # logging the loss
    return out.value


def backward(drv, k):
    for _ in range(3):
        drv.launch(k["bwd"], 1000)


def allreduce(drv, k):
    drv.launch(k[NCCL], 3000)               # COMM_LINE


def step(drv, k):
    drv.launch(k["sgd"], 100)


def postprocess(drv, k):
    drv.launch(k["reshape"], 2000)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    o = p.parse_args()
    drv = simcuda.Driver(None, False)
    drv.init()
    mod = drv.load_module()
    k = {n: simcuda.Kernel(drv, mod, n) for n in ("normalize", "fwd", "bwd", NCCL, "sgd", "reshape")}
    buf = drv.mem_alloc(256)
    drv.ctx_synchronize()
    for _ in range(o.steps):
        load_batch(drv, k)
        forward(drv, k)
        loss_item(drv, buf)
        backward(drv, k)
        allreduce(drv, k)
        step(drv, k)
        postprocess(drv, k)                 # TAIL_LINE
    drv.ctx_synchronize()
    drv.mem_free(buf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
