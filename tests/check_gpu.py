#!/usr/bin/env python3
"""Check the GPU side of a gpubpf trace of the simulated driver.

usage: check_gpu.py [--edge-ms MS] TRACE [TRUTH]

TRUTH (sim/train.py's) gives each launch's kernel name and duration.
Prints unnumbered TAP lines (see tests/lib.sh tap_from); exits 1 on failure.
Checks:
  - every kernel, copy and memset is linked by exactly one flow to a host
    call with the same correlation id, on the GPU track of its stream
    (--edge-ms: a recording that stopped while the program ran may hold,
    in its last MS milliseconds, GPU work whose call had not returned);
  - a launch's kernel argument names the kernel it caused;
  - no GPU work starts before the call that caused it, and the trace says
    no record was skewed;
  - work on one stream track never overlaps;
  - every copy and memset lasts longer than zero (real GPU work never
    takes no time; the simulated driver gives each one at least 1 us);
  - with TRUTH: per kernel name, as many kernels as the workload launched,
    each lasting the duration the workload gave it.
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
    truth = json.load(open(args[1])) if len(args) > 1 else None
    ev = d["traceEvents"]
    api = [e for e in ev if e.get("cat") == "cuda_api"]
    work = [e for e in ev if e.get("cat") in ("kernel", "nccl", "gpu_memcpy", "gpu_memset")]
    # flows v2: bound to the slices themselves, one id per call
    flow_out = {e["bind_id"]: e for e in api if e.get("flow_out")}
    flow_in = [e for e in work if e.get("flow_in")]
    legacy = [e for e in ev if e.get("ph") in ("s", "t", "f")]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    ok(work, "the trace has GPU work (%d kernels, copies and memsets)" % len(work))

    by_corr = {(e["pid"], e["args"]["correlation"]): e for e in api if "correlation" in e["args"]}
    # each GPU event: one flow, which starts on its call
    bad_flow, bad_name, skew, bad_track = [], [], [], []
    end = max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e)
    unlinked_at_edge = 0
    for w in work:
        corr = w["args"]["correlation"]
        host = by_corr.get((w["pid"], corr))
        if host is None and w["ts"] >= end - edge_us:
            unlinked_at_edge += 1
            continue
        if host is None:
            bad_flow.append("%s corr %d: no host call with that correlation" % (w["name"], corr))
            continue
        if not w.get("flow_in") or flow_out.get(w.get("bind_id")) is not host:
            bad_flow.append("%s corr %d: no flow from %s" % (w["name"], corr, host["name"]))
        if w["cat"] == "kernel" and host["name"].startswith("cuLaunch") \
                and host["args"].get("kernel") != w["name"]:
            bad_name.append("%s: launch says kernel %r" % (w["name"], host["args"].get("kernel")))
        if w["ts"] < host["ts"]:
            skew.append("%s starts %.3f us before %s" % (w["name"], host["ts"] - w["ts"], host["name"]))
        want = "GPU %d / stream %d" % (w["args"]["device"], w["args"]["stream"])
        if names.get((w["pid"], w["tid"])) != want:
            bad_track.append("%s on track %r, not %r" % (w["name"], names.get((w["pid"], w["tid"])), want))
    ok(not bad_flow, "every GPU event has a flow from the host call with its correlation id",
       "\n".join(bad_flow))
    callers = {(e["pid"], e["args"]["correlation"]) for e in work}
    ok(len(flow_in) == len(work) - unlinked_at_edge and not legacy
       and len(flow_out) == len({k for k in callers if k in by_corr}),
       "one flow per GPU event, one start per call (%d calls, %d ends, %d events, "
       "%d unlinked at the end, %d legacy flow events)"
       % (len(flow_out), len(flow_in), len(work), unlinked_at_edge, len(legacy)))
    ok(not bad_name, "each launch names the kernel it caused", "\n".join(bad_name))
    ok(not skew and d["gpubpf"]["gpu"]["clock_skewed_events"] == 0,
       "no GPU work starts before the call that caused it", "\n".join(skew))
    ok(not bad_track, "GPU work is on the track of its device and stream", "\n".join(bad_track))

    overlap = []
    lanes = collections.defaultdict(list)
    for w in work:
        lanes[w["pid"], w["tid"]].append(w)
    for lane in lanes.values():
        lane.sort(key=lambda w: w["ts"])
        for a, b in zip(lane, lane[1:]):
            if b["ts"] < a["ts"] + a["dur"] - 0.001:
                overlap.append("%s overlaps %s on %s" % (a["name"], b["name"], names.get((a["pid"], a["tid"]))))
    ok(not overlap, "work on one stream never overlaps (%d tracks)" % len(lanes), "\n".join(overlap))
    zero = ["%s of %s bytes at %.3f lasted %r us" % (w["name"], w["args"].get("bytes"), w["ts"], w.get("dur"))
            for w in work if w["cat"] in ("gpu_memcpy", "gpu_memset") and not w.get("dur", 0) > 0]
    ok(not zero, "every copy and memset lasts longer than zero (%d of them)"
       % len([w for w in work if w["cat"] in ("gpu_memcpy", "gpu_memset")]), "\n".join(zero))

    if truth is None:
        sys.exit(exit_status())
    launches = [c for c in truth if "duration_us" in c.get("args", {}) and c["ret"] == 0]
    want = collections.Counter(c["args"]["kernel"] for c in launches)
    got = collections.Counter(w["name"] for w in work if w["cat"] == "kernel")
    ok(want == got, "per kernel name, as many kernels as the workload launched (%d)" % sum(want.values()),
       "trace %s\nworkload %s" % (dict(got), dict(want)))
    durs = collections.defaultdict(list)
    for c in launches:
        durs[c["args"]["kernel"]].append(c["args"]["duration_us"])
    bad_dur = []
    for w in work:
        if w["cat"] == "kernel" and w["name"] in durs:
            if not any(abs(w["dur"] - u) <= 1.0 for u in durs[w["name"]]):
                bad_dur.append("%s lasted %.3f us, workload gave %s" % (w["name"], w["dur"], sorted(set(durs[w["name"]]))))
    ok(not bad_dur, "each kernel lasted the duration the workload gave it (within 1 us)", "\n".join(bad_dur))
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
