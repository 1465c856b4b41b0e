#!/usr/bin/env python3
"""Check the flows from GIL waits to their holders, as Perfetto imports them.

usage: check_gil_flows.py TRACE.json [TRACE.pftrace]

TRACE.json and TRACE.pftrace are one recording written in both formats.
Imports them with trace_processor_shell ($TRACE_PROCESSOR) and prints TAP
lines (no plan).  In the JSON, a GIL wait (a thread_state slice, state
gil_wait) with a holder_tid is linked by exactly one flow to the slice of
the holder's state track (tid 0x20000000 + holder_tid) that contains the
wait's start, unless that slice is a GIL wait itself, and no other flow
links thread state slices.  Perfetto draws a flow from the slice that
starts first, so the flow table's ends are compared as pairs.  The
.pftrace must hold the same flows (pairs of slices by time, duration and
name: its state tracks carry no thread id).
"""
import os
import subprocess
import sys

from tap import exit_status, ok
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_perfetto import arg, query  # noqa: E402

STATE_TID_BASE = 0x20000000


def state_flows(tp, trace):
    """Pairs (a, b) of thread state slice ids linked by a flow, a < b."""
    rows = query(tp, trace, """
        select slice_out, slice_in from flow f
        where exists (select 1 from slice s where s.id in (f.slice_out, f.slice_in)
                      and s.category = 'thread_state')""")
    return [tuple(sorted((int(r["slice_out"]), int(r["slice_in"])))) for r in rows]


def check_json(tp, trace):
    rows = query(tp, trace, """
        select s.id, s.ts, s.dur, s.name, th.tid, %s as state, %s as holder from slice s
        join thread_track tt on tt.id = s.track_id join thread th using (utid)
        where s.category = 'thread_state'""" % (arg("s", "state", "display_value"),
                                                arg("s", "holder_tid")))
    by_tid = {}
    slices = {}
    for r in rows:
        r.update(id=int(r["id"]), ts=int(r["ts"]), dur=int(r["dur"]), tid=int(r["tid"]))
        by_tid.setdefault(r["tid"], []).append(r)
        slices[r["id"]] = r
    want = set()
    waits = 0
    for r in rows:
        if r["state"] != "gil_wait" or not r["holder"]:
            continue
        waits += 1
        held = [h for h in by_tid.get(STATE_TID_BASE + int(r["holder"]), [])
                if h["ts"] <= r["ts"] < h["ts"] + h["dur"]]
        if held and held[0]["state"] != "gil_wait":
            want.add(tuple(sorted((r["id"], held[0]["id"]))))
    got = state_flows(tp, trace)
    ok(want and len(got) == len(want) and set(got) == want,
       "%s: each of %d GIL waits with a holder (of %d) has one flow, to the holder's state "
       "track, at the wait's start" % (os.path.basename(trace), len(want), waits),
       "%d flows, %d expected; %d unexpected, %d missing" %
       (len(got), len(want), len(set(got) - want), len(want - set(got))))
    return {tuple(sorted(((slices[a]["ts"], slices[a]["dur"], slices[a]["name"]),
                          (slices[b]["ts"], slices[b]["dur"], slices[b]["name"]))))
            for a, b in want}


def check_pftrace(tp, trace, want, base_ns):
    rows = query(tp, trace, """
        select s.id, s.ts, s.dur, s.name from slice s where s.category = 'thread_state'""")
    slices = {int(r["id"]): (int(r["ts"]) - base_ns, int(r["dur"]), r["name"]) for r in rows}
    got = [tuple(sorted((slices[a], slices[b]))) for a, b in state_flows(tp, trace)]
    ok(len(got) == len(want) and set(got) == want,
       "%s: the same %d flows" % (os.path.basename(trace), len(want)),
       "%d flows, %d expected; %d unexpected, %d missing" %
       (len(got), len(want), len(set(got) - want), len(want - set(got))))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    tp = os.environ.get("TRACE_PROCESSOR")
    if not tp:
        sys.exit("check_gil_flows.py: TRACE_PROCESSOR is not set")
    want = check_json(tp, sys.argv[1])
    if len(sys.argv) == 3:
        import json
        with open(sys.argv[1]) as f:
            base_ns = json.load(f)["gpubpf"]["ts_base_ns"]
        check_pftrace(tp, sys.argv[2], want, base_ns)
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
