#!/usr/bin/env python3
"""Check the report's host-bound causes on a recording of thread_states.py.

usage: check_causes.py REPORT.json TRUTH.json

Prints TAP lines (no plan).  The workload launches a kernel after each
phase, so the GPU runs dry over each one: the report's host-bound time
must go mostly to that phase's state (the tolerances of check_states.py,
as shares of the phase), pure Python to busy_loop through its samples,
and the causes must sum to the host-bound time.
"""
import collections
import json
import sys

from tap import exit_status, ok


def main():
    rep, truth = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    proc = [p for p in rep["processes"] if p["pid"] == truth["pid"]]
    idle = proc[0]["devices"][0]["idle"] if proc and proc[0]["devices"] else {}
    causes = idle.get("host_bound_causes", [])
    ok(causes, "the report has host-bound causes")
    total = sum(c["ms"] for c in causes)
    ok(abs(total - idle.get("host_bound_ms", 0)) <= 0.001 * max(len(causes), 1),
       "the causes sum to host_bound_ms", "%.3f vs %s" % (total, idle.get("host_bound_ms")))
    ms = collections.Counter()
    for c in causes:
        func = (c["site"] or "").split(" (")[0]
        ms[c["cause"] + (":" + func if c["cause"] == "running" else "")] += c["ms"]
    phase = {p["name"]: (p["end"] - p["start"]) / 1e6 for p in truth["phases"]}
    want = (("busy", "running:busy_loop", 0.5), ("gil", "gil_wait", 0.4), ("read", "io", 0.8),
            ("sleep", "sleep", 0.8), ("shared", "runnable", 0.15))
    diag = "\n".join("%s %.3f ms" % kv for kv in ms.most_common())
    for name, cause, share in want:
        ok(ms[cause] >= share * phase[name],
           "phase %s: at least %.0f%% of it host-bound as %s" % (name, 100 * share, cause),
           "phase %.3f ms\n%s" % (phase[name], diag))
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
