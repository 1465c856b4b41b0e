#!/usr/bin/env python3
"""Compare the Python stacks in a gpubpf trace with the workload's own.

usage: check_stacks.py TRACE TRUTH DEPTH

TRUTH: tests/py/stackwork.py's list of {"name", "tid", "stack"}.  DEPTH:
the --stack-depth gpubpf ran with.  Calls are matched in order per (name,
thread).  Prints unnumbered TAP lines (tests/lib.sh tap_from).
"""
import collections
import json
import sys

from tap import exit_status, ok


def main():
    d = json.load(open(sys.argv[1]))
    truth = json.load(open(sys.argv[2]))
    depth = int(sys.argv[3])
    names = {c["name"] for c in truth}
    tids = {c["tid"] for c in truth}
    ev = [e for e in d["traceEvents"] if e.get("cat") == "cuda_api"
          and e["name"] in names and e["tid"] in tids]
    got = collections.defaultdict(list)
    for e in sorted(ev, key=lambda e: e["ts"]):
        got[e["name"], e["tid"]].append(e)
    want = collections.defaultdict(list)
    for c in truth:
        want[c["name"], c["tid"]].append(c)
    ok(sum(len(v) for v in got.values()) == len(truth),
       "the trace has the workload's %d calls" % len(truth),
       "trace %d" % sum(len(v) for v in got.values()))
    bad, trunc_bad, truncated = [], [], 0
    for key, calls in want.items():
        for c, e in zip(calls, got.get(key, [])):
            s = e["args"].get("stack")
            w = c["stack"]
            if len(w) > depth:
                truncated += 1
                if s != w[:depth] or e["args"].get("stack_truncated") is not True:
                    trunc_bad.append("%s: %d frames, truncated=%r; want the innermost %d of %d"
                                     % (key[0], len(s or []), e["args"].get("stack_truncated"), depth, len(w)))
            elif s != w or "stack_truncated" in e["args"]:
                first = next((i for i, (a, b) in enumerate(zip(s or [], w)) if a != b),
                             min(len(s or []), len(w)))
                bad.append("%s on %d, frame %d: got %r, want %r (got %d frames, want %d)"
                           % (key[0], key[1], first, (s or [None] * (first + 1) + [None])[first:first + 1],
                              w[first:first + 1], len(s or []), len(w)))
    ok(not bad, "every stack equals the workload's (names and lines)", "\n".join(bad))
    if truncated:
        ok(not trunc_bad, "%d stacks deeper than %d: the innermost %d frames, flagged truncated"
           % (truncated, depth, depth), "\n".join(trunc_bad))
    # scopes: Model.forward is one block around the two launches of its layers
    # (named as its frames are: "forward" on 3.10, which has no qualified names)
    main_tid = truth[0]["tid"]
    model_forward = truth[0]["stack"][3]
    scopes = [e for e in d["traceEvents"] if e.get("cat") == "python" and e["tid"] == main_tid
              and e["args"].get("first_frame") == model_forward]
    launches = [e for e in got["cuLaunchKernel", main_tid]]
    inside = [l for l in launches if scopes and
              scopes[0]["ts"] - 0.0005 <= l["ts"] <= scopes[0]["ts"] + scopes[0]["dur"] + 0.0005]
    ok(len(scopes) >= 1 and len(inside) == 2,
       "Model.forward is a slice on the thread's track around its layers' two launches",
       "%d scopes, %d launches inside the first" % (len(scopes), len(inside)))
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
