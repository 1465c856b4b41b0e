#!/usr/bin/env python3
"""Compare a gpubpf trace with the ground truth a workload recorded.

usage: check_trace.py TRACE TRUTH PROBED_LIST [--pid PID] [--exact-args]

TRUTH is either tests/bin/cudacalls' format ({"pid","tid","calls":[...]})
or sim/train.py's (a list of calls, each with "pid" and "tid").
PROBED_LIST is the output of `gpubpf list`.

Prints TAP lines (no plan: the caller counts them with the rest of its
test) and exits 1 if any check failed.  Checks, per process:
  - the trace has exactly the probed calls the workload made, per name;
  - matched in order per name, each call's tid equals the workload's;
  - the host call lies within the workload's own timestamps around it;
  - decoded arguments equal the values the workload passed.
"""
import collections
import json
import sys

failed = 0
count = 0


def ok(cond, desc, diag=None):
    global failed, count
    count += 1
    print(("ok" if cond else "not ok") + " - " + desc)
    if not cond:
        failed += 1
        if diag:
            for line in str(diag).splitlines()[:20]:
                print("#   " + line)
    return cond


def load_truth(path):
    d = json.load(open(path))
    if isinstance(d, dict):
        calls = d["calls"]
        for c in calls:
            c.setdefault("pid", d["pid"])
            c.setdefault("tid", d["tid"])
        return calls
    return d


def t_bounds(c):
    t0 = c.get("t0", c.get("t0_ns"))
    t1 = c.get("t1", c.get("t1_ns"))
    return t0, t1


def hexval(v):
    if isinstance(v, str):
        return int(v, 16)
    return v


def compare_args(tc, ev, names_by_handle):
    """Return a list of mismatches between truth args and trace args."""
    ta, ea = tc.get("args", {}), ev.get("args", {})
    bad = []
    name = tc["name"]
    for key in ("grid", "block", "shared_mem", "bytes", "kind", "count"):
        if key in ta and key in ea and ta[key] != ea[key]:
            bad.append("%s: trace %r, truth %r" % (key, ea[key], ta[key]))
        elif key in ta and key not in ea and key != "count":
            bad.append("%s missing in trace (truth %r)" % (key, ta[key]))
    if "stream" in ta:
        if "stream" not in ea or hexval(ea["stream"]) != hexval(ta["stream"]):
            bad.append("stream: trace %r, truth %r" % (ea.get("stream"), ta["stream"]))
    # pointers: allocation results, freed/copied/set addresses
    if "ptr" in ta and hexval(ta["ptr"]) and hexval(ea.get("ptr", "0x0")) != hexval(ta["ptr"]):
        bad.append("ptr: trace %r, truth %r" % (ea.get("ptr"), ta["ptr"]))
    # kernels: the trace names a kernel by name when a lookup named it
    func = ta.get("func")
    if func is not None and name.startswith("cuLaunch") and "kernel" in ea:
        want = names_by_handle.get(hexval(func), None)
        got = ea["kernel"]
        if want is not None and got != want:
            bad.append("kernel: trace %r, truth %r" % (got, want))
        if want is None and got.startswith("0x") and hexval(got) != hexval(func):
            bad.append("kernel handle: trace %r, truth %r" % (got, func))
    if ("kernel" in ta and "kernel" in ea and not ta["kernel"].startswith("0x")
            and ta["kernel"] != ea["kernel"]):
        bad.append("kernel: trace %r, truth %r" % (ea["kernel"], ta["kernel"]))
    if "ret" in ea and ea["ret"] != tc.get("ret"):
        bad.append("ret: trace %r, truth %r" % (ea["ret"], tc.get("ret")))
    return bad


def main():
    args = sys.argv[1:]
    exact = "--exact-args" in args
    args = [a for a in args if a != "--exact-args"]
    pid = None
    if "--pid" in args:
        i = args.index("--pid")
        pid = int(args[i + 1])
        del args[i:i + 2]
    trace_path, truth_path, probed_path = args
    trace = json.load(open(trace_path))
    truth = load_truth(truth_path)
    probed = {l.split()[0]: l.split()[2] for l in open(probed_path) if l.strip()}

    events = [e for e in trace["traceEvents"] if e.get("cat") == "cuda_api"]
    pids = sorted({c["pid"] for c in truth}) if pid is None else [pid]
    for p in pids:
        tcalls = [c for c in truth if c["pid"] == p and c["name"] in probed]
        evs = [e for e in events if e["pid"] == p]
        want = collections.Counter(c["name"] for c in tcalls)
        got = collections.Counter(e["name"] for e in evs)
        diff = {n: (got.get(n, 0), want.get(n, 0)) for n in set(want) | set(got)
                if got.get(n, 0) != want.get(n, 0)}
        ok(not diff, "pid %d: %d calls of %d names, counts per name equal the workload's"
           % (p, len(tcalls), len(want)),
           "\n".join("%s: trace %d, workload %d" % (n, g, w) for n, (g, w) in sorted(diff.items())))

        names_by_handle = {}
        for c in tcalls:
            if c["name"] in ("cuModuleGetFunction", "cuLibraryGetKernel") and c.get("ret") == 0:
                a = c["args"]
                names_by_handle[hexval(a.get("handle", a.get("func", "0x0")))] = a["name"]

        by_name = collections.defaultdict(list)
        for e in sorted(evs, key=lambda e: e["ts"]):
            by_name[e["name"]].append(e)
        tid_bad, time_bad, arg_bad = [], [], []
        for name in want:
            tc_list = sorted([c for c in tcalls if c["name"] == name], key=lambda c: t_bounds(c)[0])
            for tc, ev in zip(tc_list, by_name.get(name, [])):
                if ev["tid"] != tc["tid"]:
                    tid_bad.append("%s: tid %d, workload %d" % (name, ev["tid"], tc["tid"]))
                t0, t1 = t_bounds(tc)
                ts_ns = round(ev["ts"] * 1000)
                end_ns = round((ev["ts"] + ev["dur"]) * 1000)
                if t0 is not None and not (t0 - 1 <= ts_ns and end_ns <= t1 + 1):
                    time_bad.append("%s: [%d, %d] not within workload's [%d, %d]"
                                    % (name, ts_ns, end_ns, t0, t1))
                if probed[name] == "entry+return" and "ret" not in ev.get("args", {}):
                    arg_bad.append("%s: no ret although its return is probed" % name)
                for b in compare_args(tc, ev, names_by_handle):
                    arg_bad.append("%s: %s" % (name, b))
        ok(not tid_bad, "pid %d: every call on the workload's own thread" % p, "\n".join(tid_bad))
        ok(not time_bad, "pid %d: every call within the workload's timestamps around it" % p,
           "\n".join(time_bad))
        ok(not arg_bad, "pid %d: decoded arguments equal what the workload passed" % p,
           "\n".join(arg_bad))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
