#!/usr/bin/env python3
"""How long after its launch call each kernel started, over a recording.

usage: launch_latency.py TRACE [BUCKET_S]
Pairs each kernel with its launch (same pid and correlation id) and prints,
per BUCKET_S seconds (default 1) of the trace, the number of kernels and
the minimum, 10th and 50th percentile of (kernel start - launch call
start) in microseconds.  A negative minimum is GPU work placed before the
call that caused it: a constant one over the whole trace is a clock offset
between host and GPU timestamps, one that grows is a drift.
"""
import collections
import json
import sys


def main():
    d = json.load(open(sys.argv[1]))
    bucket = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    ev = d["traceEvents"]
    calls = {(e["pid"], e["args"]["correlation"]): e for e in ev
             if e.get("cat") == "cuda_api" and e["name"].startswith("cuLaunch")
             and "correlation" in e.get("args", {})}
    lat = collections.defaultdict(list)
    t0 = None
    for k in sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"]):
        c = calls.get((k["pid"], k["args"]["correlation"]))
        if c is None:
            continue
        t0 = k["ts"] if t0 is None else t0
        lat[int((k["ts"] - t0) / 1e6 / bucket)].append(k["ts"] - c["ts"])
    print("%s: kernel start - launch call (us), per %g s" % (sys.argv[1], bucket))
    print("%6s %7s %9s %9s %9s" % ("s", "kernels", "min", "p10", "p50"))
    for b in sorted(lat):
        v = sorted(lat[b])
        print("%6g %7d %9.2f %9.2f %9.2f" % (b * bucket, len(v), v[0], v[len(v) // 10], v[len(v) // 2]))


if __name__ == "__main__":
    main()
