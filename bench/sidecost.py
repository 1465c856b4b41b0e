"""Per-call cost from a Python stack, under several tracers side by side.

usage: sidecost.py DEPTH CALLS ROUNDS LIB... -R READYFILE [-H] [-P BYTES]
Python's counterpart of bench/sidecost.c: each LIB a copy of the bench
libcuda at its own path, the first one untraced.  Writes its pid to
READYFILE, waits for SIGUSR1, then until every copy but the first has a
uprobe breakpoint (int3) in cuLaunchKernel's first 8 bytes; then, from a
stack of exactly DEPTH Python frames (1: from the module's own code), ROUNDS rounds of CALLS
calls of each copy's cuLaunchKernel in a row, the order rotated each round.
Prints one line a round: each copy's ns per call, in the order given.
-P: the DEPTH frames sit on two more, <module>'s and one with BYTES / 8
local variables, which moves them up the thread's data stack by BYTES
(CPython 3.11+, whose frames lie one after the other): to place them
across a page boundary, or not.  Record with --stack-depth DEPTH, so that
the walk stops above the two.
-H: then writes READYFILE.done and waits for SIGUSR1 again, as
bench/handshake.h's done_hold(): the tracers stay attached until told.
"""
import argparse
import ctypes
import os
import signal
import sys
import time

# 3.6 has no perf_counter_ns()
clock_ns = getattr(time, "perf_counter_ns", lambda: int(time.perf_counter() * 1e9))

AP = argparse.ArgumentParser(usage=__doc__)
AP.add_argument("depth", type=int)
AP.add_argument("calls", type=int)
AP.add_argument("rounds", type=int)
AP.add_argument("libs", nargs="+")
AP.add_argument("-R", dest="ready", required=True)
AP.add_argument("-H", dest="hold", action="store_true")
AP.add_argument("-P", dest="pad", type=int, default=0)
A = AP.parse_args()
DEPTH, CALLS, ROUNDS, READY = A.depth, A.calls, A.rounds, A.ready
if DEPTH < 1 or CALLS < 1 or ROUNDS < 1 or A.pad < 0:
    sys.exit(__doc__)
libs = [ctypes.CDLL(p, mode=os.RTLD_LOCAL) for p in A.libs]
for lib in libs:
    lib.cuInit(0)
FNS = [lib.cuLaunchKernel for lib in libs]
ARGS = (None, 1, 1, 1, 1, 1, 1, 0, None, None, None)


def probed(fn):
    return b"\xcc" in ctypes.string_at(ctypes.cast(fn, ctypes.c_void_p).value, 8)


def bottom():
    rows = []
    for r in range(ROUNDS):
        row = [0.0] * len(FNS)
        for j in range(len(FNS)):
            i = (j + r) % len(FNS)
            fn = FNS[i]
            t0 = clock_ns()
            for _ in range(CALLS):
                fn(*ARGS)
            row[i] = (clock_ns() - t0) / CALLS
        rows.append(row)
    return rows


def down(depth):
    return bottom() if depth <= 1 else down(depth - 1)


# padded(): down(), with A.pad / 8 local variables more (never assigned)
exec("def padded(depth):\n"
     "    if depth < 0:\n"
     "        %s = None\n"
     "    return bottom() if depth <= 1 else down(depth - 1)\n"
     % " = ".join(["p%d" % i for i in range(A.pad // 8)] + ["p"]))


for fn in FNS:                      # warm-up, before any probe
    for _ in range(200):
        fn(*ARGS)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
with open(READY + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(READY + ".tmp", READY)
signal.sigwait([signal.SIGUSR1])
until = time.monotonic() + 30
while not all(probed(fn) for fn in FNS[1:]):
    if time.monotonic() > until:
        sys.exit("sidecost.py: no probe at every copy's cuLaunchKernel after 30 s")
    time.sleep(0.001)
if DEPTH == 1:                      # bottom()'s rounds, in <module> itself
    ROWS = []
    for r in range(ROUNDS):
        ROW = [0.0] * len(FNS)
        for j in range(len(FNS)):
            i = (j + r) % len(FNS)
            fn = FNS[i]
            t0 = clock_ns()
            for _ in range(CALLS):
                fn(*ARGS)
            ROW[i] = (clock_ns() - t0) / CALLS
        ROWS.append(ROW)
elif A.pad:                         # <module>, padded, down * (DEPTH - 1), bottom
    ROWS = padded(DEPTH)
elif DEPTH == 2:
    ROWS = bottom()
else:                               # <module>, down * (DEPTH - 2), bottom
    ROWS = down(DEPTH - 2)
for row in ROWS:
    print(" ".join("%.1f" % v for v in row))
if A.hold:
    sys.stdout.flush()
    open(READY + ".done", "w").close()
    signal.sigwait([signal.SIGUSR1])
