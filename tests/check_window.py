#!/usr/bin/env python3
"""Check a late-attach recording: every launch after the GPU window opened
has its kernel, linked by correlation id.

usage: check_window.py [--edge-ms MS] TRACE PID

The trace's gpubpf.gpu.window_open_us[PID] says when the injection library
started collecting; launches before it have no GPU record by design (CUPTI
cannot see work queued before it subscribed).  The library marks the
window just after it started collecting, so a launch made in between (the
library's thread can be preempted there) may end before the mark: it
carries a correlation id and has its kernel.  What must never be is a
launch with a correlation id and no kernel.  Launches in the last MS
milliseconds may still be running when the recording stopped.  Prints unnumbered TAP lines (tests/lib.sh
tap_from); exits 1 on failure.
"""
import collections
import json
import sys

from tap import exit_status, ok


def main():
    args = sys.argv[1:]
    edge_us = 0
    if args[:1] == ["--edge-ms"]:
        edge_us = float(args[1]) * 1000
        args = args[2:]
    d = json.load(open(args[0]))
    pid = int(args[1])
    ev = d["traceEvents"]
    win = d["gpubpf"]["gpu"].get("window_open_us", {}).get(str(pid))
    ok(win is not None, "the trace says when pid %d's GPU window opened" % pid)
    if win is None:
        return exit_status()
    end = max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e)
    launches = [e for e in ev if e.get("cat") == "cuda_api" and e["pid"] == pid
                and e["name"].startswith("cuLaunch") and e["name"] != "cuLaunchHostFunc"]
    kernels = collections.Counter(e["args"]["correlation"] for e in ev
                                  if e.get("cat") == "kernel" and e["pid"] == pid)
    after = [e for e in launches if e["ts"] >= win and e["ts"] + e.get("dur", 0) < end - edge_us]
    before = [e for e in launches if e["ts"] + e.get("dur", 0) < win]
    missing = [e for e in after if kernels.get(e["args"].get("correlation"), 0) < 1]
    ok(after and not missing,
       "every launch after the window opened has its kernel (%d launches, %d before the window)"
       % (len(after), len(before)),
       "\n".join("%s at %.3f us: corr %s" % (e["name"], e["ts"], e["args"].get("correlation"))
                 for e in missing))
    early = [e for e in before if "correlation" in e["args"]]
    unlinked = [e for e in early if kernels.get(e["args"]["correlation"], 0) < 1]
    ok(not unlinked, "launches before the window with a correlation id have their kernel "
       "(%d of %d)" % (len(early), len(before)),
       "\n".join("%s at %.3f us: corr %s" % (e["name"], e["ts"], e["args"]["correlation"])
                 for e in unlinked))
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
