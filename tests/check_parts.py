#!/usr/bin/env python3
"""Compare a trace written in parts with the same recording written whole.

usage: check_parts.py WHOLE PARTS

Prints TAP lines (no plan) and exits 1 if any check failed.  The two must
hold the same events (every member equal, "ts" and "dur" to the
nanosecond), the same metadata but for the arrow ids, and the same arrows:
each event's arrow ends are compared as the events at their other ends.
Arrow ids themselves may differ (a part numbers its own), and so may the
order of events at one instant on different tracks.
"""
import collections
import json
import sys

from tap import exit_status, ok

FLOW_KEYS = ("bind_id", "flow_in", "flow_out")


def key(ev):
    return json.dumps({k: v for k, v in ev.items() if k not in FLOW_KEYS}, sort_keys=True)


def arrows(events):
    """Multiset of (from event, to event) of the arrows, as event keys."""
    outs = collections.defaultdict(list)
    ins = collections.defaultdict(list)
    for ev in events:
        if "bind_id" in ev:
            if ev.get("flow_out"):
                outs[ev["bind_id"]].append(key(ev))
            if ev.get("flow_in"):
                ins[ev["bind_id"]].append(key(ev))
    pairs = collections.Counter()
    for fid, srcs in outs.items():
        for dst in ins.get(fid, []):
            for src in srcs:
                if src != dst:
                    pairs[(src, dst)] += 1
    return pairs


def main():
    whole, parts = (json.load(open(p)) for p in sys.argv[1:3])
    we, pe = whole["traceEvents"], parts["traceEvents"]
    ok(whole["gpubpf"] == parts["gpubpf"], "the same metadata")
    wc, pc = collections.Counter(map(key, we)), collections.Counter(map(key, pe))
    ok(wc == pc, "the same %d events (%d only whole, %d only in parts)"
       % (len(we), sum((wc - pc).values()), sum((pc - wc).values())))
    for k in list((wc - pc).keys())[:3] + list((pc - wc).keys())[:3]:
        print("#  differs: %s" % k[:300])
    wa, pa = arrows(we), arrows(pe)
    ok(wa == pa and len(wa) > 0, "the same %d arrows (%d only whole, %d only in parts)"
       % (sum(wa.values()), sum((wa - pa).values()), sum((pa - wa).values())))
    ids = [ev["bind_id"] for ev in pe if ev.get("flow_out")]
    ok(len(ids) == len(set(ids)), "arrow ids unique in the parts' trace")
    ts = [ev["ts"] for ev in pe if "ts" in ev]
    ok(all(a <= b for a, b in zip(ts, ts[1:])), "the parts' trace in time order")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
