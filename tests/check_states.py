#!/usr/bin/env python3
"""Check the thread states and samples of a recording of thread_states.py.

usage: check_states.py TRACE TRUTH.json [--holder-only]

Prints TAP lines (no plan).  For each phase of the workload's main thread,
the share of the phase's time in each state (from the "<thread> state"
track) must be mostly the right one; GIL waits name the hog thread as
holder; samples taken in pure Python land in busy_loop; each thread's
state slices tile its time (no gap, no overlap).  With --holder-only,
of the phases only the holders of the GIL waits are checked (CPython
3.7 to 3.10: their sleep is a select, and their GIL hands over
differently).  Tolerances are generous: the machines are small and
shared.
"""
import collections
import json
import sys

from tap import exit_status, ok

STATE_TID_BASE = 0x20000000


def shares(states, start, end):
    """{slice name: share of [start, end)} and {state: share}."""
    by_name = collections.Counter()
    by_state = collections.Counter()
    for e in states:
        s, f = max(e["ts"], start), min(e["ts"] + e["dur"], end)
        if f > s:
            by_name[e["name"]] += f - s
            by_state[e["args"]["state"]] += f - s
    tot = end - start
    return ({k: v / tot for k, v in by_name.items()},
            {k: v / tot for k, v in by_state.items()})


def fmt(d):
    return ", ".join("%s %.2f" % (k, v) for k, v in sorted(d.items(), key=lambda x: -x[1]))


def check_tiling(tracks):
    bad = []
    for tid, sl in tracks.items():
        sl = sorted(sl, key=lambda e: e["ts"])
        for a, b in zip(sl, sl[1:]):
            if abs(a["ts"] + a["dur"] - b["ts"]) > 0.0015:
                bad.append("tid %d: %s ends at %.3f, %s starts at %.3f" %
                           (tid - STATE_TID_BASE, a["name"], a["ts"] + a["dur"],
                            b["name"], b["ts"]))
    ok(not bad, "the state slices of each of %d threads tile its time" % len(tracks),
       "\n".join(bad[:10]))


def main():
    args = sys.argv[1:]
    holder_only = "--holder-only" in args
    args = [a for a in args if a != "--holder-only"]
    trace, truth = json.load(open(args[0])), json.load(open(args[1]))
    base = trace["gpubpf"]["ts_base_ns"]
    ev = trace["traceEvents"]
    tracks = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") == "thread_state":
            tracks[e["tid"]].append(e)
    main_tid = STATE_TID_BASE + truth["main"]
    mine = tracks.get(main_tid, [])
    samples = [e for e in ev if e.get("cat") == "sample" and e["tid"] == main_tid]
    ok(mine, "the main thread has a state track")
    check_tiling(tracks)
    want = {
        # on a CPU or waiting for one; on these 2-vCPU machines the other
        # threads on it (the recorder's) can take half its time (a clean
        # CI run saw running 0.48, runnable 0.52)
        "busy": lambda n, s: s.get("running", 0) >= 0.3
        and s.get("running", 0) + s.get("runnable", 0) >= 0.8,
        "gil": lambda n, s: s.get("gil_wait", 0) >= 0.4,
        "read": lambda n, s: n.get("read", 0) >= 0.8,
        "sleep": lambda n, s: s.get("sleep", 0) >= 0.8,
        "shared": lambda n, s: s.get("runnable", 0) >= 0.15 and s.get("running", 0) >= 0.15,
    }
    for ph in truth["phases"]:
        start, end = (ph["start"] - base) / 1e3, (ph["end"] - base) / 1e3
        n, s = shares(mine, start, end)
        if not holder_only:
            ok(want[ph["name"]](n, s), "phase %s: mostly the right state" % ph["name"], fmt(n))
        if ph["name"] == "gil":
            waits = [e for e in mine if e["args"]["state"] == "gil_wait"
                     and start <= e["ts"] < end]
            named = [e for e in waits if e["args"].get("holder_tid") == truth["hog"]]
            ok(waits and len(named) >= 0.8 * len(waits),
               "phase gil: the GIL waits name the hog thread as holder",
               "%d of %d waits; holders %s" % (len(named), len(waits), collections.Counter(
                   e["args"].get("holder_tid") for e in waits).most_common(3)))
        if ph["name"] in ("busy", "shared") and not holder_only:
            inside = [e for e in samples if start <= e["ts"] < end]
            busy = [e for e in inside if e["name"] == "busy_loop"
                    and "busy_loop" in e["args"]["stack"][0]]
            ok(len(inside) >= 10 and len(busy) >= 0.8 * len(inside),
               "phase %s: samples land in busy_loop" % ph["name"],
               "%d samples, %d in busy_loop: %s" % (len(inside), len(busy), collections.Counter(
                   e["name"] for e in inside).most_common(3)))
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
