"""Two jobs taking turns, for a slowdown measured side by side.

usage: turns.py DEPTH CALLS ROUNDS LIB TURN_IN TURN_OUT -R READYFILE
Calls cuLaunchKernel of LIB (a copy of the bench libcuda at its own path)
from a stack of exactly DEPTH Python frames (at least 2): writes its pid to
READYFILE, then ROUNDS times waits for a byte on the FIFO TURN_IN, makes
CALLS calls, and writes a byte to TURN_OUT.  Two such processes, each one's
TURN_OUT the other's TURN_IN, take turns: a round's two blocks, a few
milliseconds apart, run at the same speed of these VMs, which moves up to
2x from second to second (bench/slowdown_bench.sh).  Waits, before its
first block, until LIB's cuLaunchKernel has a uprobe (int3) in its first 8
bytes.  Prints one line a round: the thread's CPU ns per call (what the
probes, the sampler and the scheduler hooks take of it is in there; the
hand-over's switches are not) and the wall ns per call.
"""
import argparse
import ctypes
import os
import sys
import time

AP = argparse.ArgumentParser(usage=__doc__)
for name in ("depth", "calls", "rounds"):
    AP.add_argument(name, type=int)
for name in ("lib", "turn_in", "turn_out"):
    AP.add_argument(name)
AP.add_argument("-R", dest="ready", required=True)
A = AP.parse_args()
if A.depth < 2 or A.calls < 1 or A.rounds < 1:
    sys.exit(__doc__)
LIB = ctypes.CDLL(A.lib, mode=os.RTLD_LOCAL)
LIB.cuInit(0)
FN = LIB.cuLaunchKernel
ARGS = (None, 1, 1, 1, 1, 1, 1, 0, None, None, None)
for _ in range(200):                # warm-up, before any probe
    FN(*ARGS)
# read-write: opening never blocks, and a write never fails when the other
# process has gone
TIN = os.open(A.turn_in, os.O_RDWR)
TOUT = os.open(A.turn_out, os.O_RDWR)


def bottom():
    rows = []
    for _ in range(A.rounds):
        os.read(TIN, 1)
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(A.calls):
            FN(*ARGS)
        rows.append(((time.thread_time_ns() - c0) / A.calls,
                     (time.perf_counter_ns() - t0) / A.calls))
        os.write(TOUT, b".")
    return rows


def down(depth):
    return bottom() if depth <= 1 else down(depth - 1)


with open(A.ready + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(A.ready + ".tmp", A.ready)
until = time.monotonic() + 30
while b"\xcc" not in ctypes.string_at(ctypes.cast(FN, ctypes.c_void_p).value, 8):
    if time.monotonic() > until:
        sys.exit("turns.py: no probe at cuLaunchKernel after 30 s")
    time.sleep(0.001)
# frames: <module>, down * (DEPTH - 2), bottom
for cpu, wall in (down(A.depth - 2) if A.depth > 2 else bottom()):
    print("%.1f %.1f" % (cpu, wall))
