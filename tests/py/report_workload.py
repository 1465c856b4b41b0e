#!/usr/bin/env python3
"""A workload with a known schedule for `gpubpf report` (simulated driver).

    LD_LIBRARY_PATH=build/sim python3 tests/py/report_workload.py --truth T.json

Everything on the default stream of the main thread, through sim/train.py's
Driver (which logs every call, with CLOCK_MONOTONIC times, to --truth):
  memory   cuMemAlloc_v2 64 MiB (kept), 32 MiB (freed), then cuMemAllocAsync
           128 MiB in grow(): the peak, 192 MiB
  phase 1  5 x (compute 2000 us, host sleep 10 ms): host-bound gaps
  phase 2  compute 5000 us, cuStreamSynchronize in sync_point(), sleep 5 ms,
           compute 500 us: a sync-bound gap (but the part of it longer than
           the sync blocked, host-bound)
  phase 3  compute 1000 us, ncclDevKernel_AllReduce_Sum_f32_RING_LL 3000 us on
           the same stream, compute 1000 us: fully exposed communication
  phase 4  20 steps of fwd 300 us, bwd 200 us, opt 100 us, host sleep 2 ms
The report's figures are checked against this schedule by t0510.
"""
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim"))
import train  # noqa: E402

MiB = 1 << 20
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def logged(drv, name, args, t0, ret):
    """Add a call made directly through ctypes to the driver's truth log."""
    drv.calls.append({"name": name, "pid": os.getpid(), "tid": train.gettid(), "t0_ns": t0,
                      "t1_ns": train.now_ns(), "ret": ret, "args": args})


def sync_point(drv):
    t0 = train.now_ns()
    ret = drv.fns["cuStreamSynchronize"](0)  # SYNC_LINE: the known sync line
    logged(drv, "cuStreamSynchronize", {"stream": 0}, t0, ret)


def grow(drv):
    p = ctypes.c_uint64(0)
    t0 = train.now_ns()
    ret = drv.fns["cuMemAllocAsync"](ctypes.byref(p), 128 * MiB, 0)  # PEAK_LINE
    logged(drv, "cuMemAllocAsync", {"bytes": 128 * MiB, "ptr": p.value, "stream": 0}, t0, ret)
    return p.value


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--truth", required=True)
    p.add_argument("--steps", type=int, default=20)
    o = p.parse_args()
    drv = train.Driver(None, False)
    drv.init()
    mod = drv.load_module()
    k = {n: train.Kernel(drv, mod, n) for n in ("compute", NCCL, "fwd", "bwd", "opt")}
    keep = drv.mem_alloc(64 * MiB)
    tmp = drv.mem_alloc(32 * MiB)
    drv.mem_free(tmp)
    big = grow(drv)
    drv.ctx_synchronize()
    for _ in range(5):                      # phase 1
        drv.launch(k["compute"], 2000)
        time.sleep(0.010)
    drv.launch(k["compute"], 5000)          # phase 2
    sync_point(drv)
    time.sleep(0.005)
    drv.launch(k["compute"], 500)
    time.sleep(0.003)
    drv.launch(k["compute"], 1000)          # phase 3
    drv.launch(k[NCCL], 3000)
    drv.launch(k["compute"], 1000)
    time.sleep(0.008)
    for _ in range(o.steps):                # phase 4
        drv.launch(k["fwd"], 300)
        drv.launch(k["bwd"], 200)
        drv.launch(k["opt"], 100)
        time.sleep(0.002)
    drv.ctx_synchronize()
    drv.mem_free_async(big, 0)
    drv.mem_free(keep)
    drv.ctx_synchronize()
    drv.write_truth(o.truth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
