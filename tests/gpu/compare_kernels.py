#!/usr/bin/env python3
"""Compare the kernels of a gpubpf trace with torch.profiler's, per name.

usage: compare_kernels.py GPUBPF.json T0 T1 PROFILER.json
T0, T1: the CLOCK_MONOTONIC window (ns) of the loop in the gpubpf run (the
trace's timestamps are microseconds after its gpubpf.ts_base_ns).
Prints a table and the verdicts: per-name kernel counts equal, total kernel
time within 2%.
"""
import collections
import json
import sys


def main():
    ours, t0, t1, prof = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    d = json.load(open(ours))
    base = d["gpubpf"]["ts_base_ns"]
    t0, t1 = (t0 - base) / 1000, (t1 - base) / 1000
    k = [e for e in d["traceEvents"] if e.get("cat") in ("kernel", "nccl")
         and t0 <= e["ts"] and e["ts"] + e["dur"] <= t1]
    p = [e for e in json.load(open(prof))["traceEvents"] if e.get("cat") == "kernel"]
    cg = collections.Counter(e["name"] for e in k)
    cp = collections.Counter(e["name"] for e in p)
    tg = sum(e["dur"] for e in k)
    tp = sum(e["dur"] for e in p)
    print("%-70s %8s %8s" % ("kernel", "gpubpf", "torch"))
    for n in sorted(set(cg) | set(cp), key=lambda n: -max(cg[n], cp[n])):
        print("%-70.70s %8d %8d%s" % (n, cg[n], cp[n], "" if cg[n] == cp[n] else "   <-"))
    print("kernels: gpubpf %d, torch.profiler %d" % (sum(cg.values()), sum(cp.values())))
    print("kernel time: gpubpf %.3f ms, torch.profiler %.3f ms, difference %.2f%%"
          % (tg / 1e3, tp / 1e3, 100 * (tg - tp) / tp if tp else 0))
    print("flows:", sum(1 for e in d["traceEvents"] if "bind_id" in e and e.get("flow_out")),
          "skewed:", d["gpubpf"]["gpu"]["clock_skewed_events"],
          "gpu dropped:", d["gpubpf"]["gpu"]["dropped_events"], "dropped:", d["gpubpf"]["dropped_total"])
    print("verdict: per-name counts %s" % ("EQUAL" if cg == cp else "DIFFER"))
    print("verdict: total kernel time %s" % ("WITHIN 2%" if tp and abs(tg - tp) <= 0.02 * tp else "OFF"))


if __name__ == "__main__":
    main()
