#!/usr/bin/env python3
"""Compare a gpubpf trace with the ground truth a workload recorded.

usage: check_trace.py TRACE TRUTH PROBED_LIST [--pid PID [--trace-pid TPID]] [--sim-syncs]

TRUTH is either tests/bin/cudacalls' format ({"pid","tid","calls":[...]})
or sim/train.py's (a list of calls, each with "pid" and "tid").
PROBED_LIST is the output of `gpubpf list`.  --trace-pid: the trace has
process PID's calls under TPID (a later process given an ended one's pid).

Prints TAP lines (no plan: the caller counts them with the rest of its
test) and exits 1 if any check failed.  Checks, per process:
  - the trace has exactly the probed calls the workload made, per name;
  - matched in order per name, each call's tid equals the workload's;
  - the host call lies within the workload's own timestamps around it;
  - decoded arguments equal the values the workload passed;
  - with --sim-syncs (simulated driver): each blocking sync lasts until the
    simulated kernels it waited for were done (see check_syncs).
"""
import collections
import json
import sys

from tap import exit_status, ok


TS_BASE_NS = 0     # the trace's gpubpf.ts_base_ns: its "ts" are microseconds after it


def abs_ns(us):
    """A trace time as CLOCK_MONOTONIC ns, as the workload's truth has them."""
    return TS_BASE_NS + round(us * 1000)


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
    # launches name their kernel when a captured lookup named its handle
    # or their GPU record did (GPU timing, late attach included), and show
    # the handle otherwise
    func = ta.get("func")
    if func is not None and name.startswith("cuLaunch") and "Host" not in name:
        want = names_by_handle.get(hexval(func))
        got = ea.get("kernel", "")
        if want is not None and got != want:
            bad.append("kernel: trace %r, truth %r" % (got, want))
        if want is None and got != ta.get("kernel") and \
                (not got.startswith("0x") or hexval(got) != hexval(func)):
            bad.append("kernel: trace %r, truth handle %r (no lookup captured)" % (got, func))
    if "ret" in ea and ea["ret"] != tc.get("ret"):
        bad.append("ret: trace %r, truth %r" % (ea["ret"], tc.get("ret")))
    return bad


DEFAULT_STREAMS = (0, 1, 2)   # NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
SLACK_NS = 20000              # clock reads and rounding between two processes


def stream_key(v):
    v = hexval(v)
    return 0 if v in DEFAULT_STREAMS else v


def check_syncs(p, tcalls, evs):
    """Each blocking sync must end no earlier than the simulated kernels it
    waited for.  A lower bound from the trace alone: a kernel cannot start
    before its launch call began nor before the previous kernel on its
    stream ended (the simulated driver serves each stream in order), and
    runs for the duration the workload gave it."""
    durations = collections.defaultdict(list)
    for c in tcalls:
        if "duration_us" in c.get("args", {}):
            durations[c["name"], c["tid"]].append((c.get("t0", c.get("t0_ns")),
                                                   c["args"]["duration_us"]))
    for lst in durations.values():
        lst.sort()
    seen = collections.Counter()
    busy = collections.defaultdict(int)
    waited, bad = 0, []
    for e in sorted(evs, key=lambda e: e["ts"]):
        name, a = e["name"], e.get("args", {})
        ts = abs_ns(e["ts"])
        end = abs_ns(e["ts"] + e["dur"])
        key = (name, e["tid"])
        if key in durations:
            i = seen[key]
            seen[key] += 1
            if i < len(durations[key]):
                s = stream_key(a.get("stream", 0))
                busy[s] = max(busy[s], ts) + durations[key][i][1] * 1000
            continue
        if name.startswith("cuStreamSynchronize"):
            need = busy[stream_key(a.get("stream", 0))]
        elif name.startswith("cuCtxSynchronize"):
            need = max(busy.values(), default=0)
        elif name.startswith("cuMemcpyDtoH") and "Async" not in name:
            need = busy[0]
        else:
            continue
        if need > ts:
            waited += 1
        if end + SLACK_NS < need:
            bad.append("%s at %d ended %.1f us before its work was done"
                       % (name, ts, (need - end) / 1000))
    ok(waited > 0, "pid %d: %d blocking syncs had kernels to wait for" % (p, waited))
    ok(not bad, "pid %d: every blocking sync lasted until the kernels it waited for ended" % p,
       "\n".join(bad))


def main():
    args = sys.argv[1:]
    sim_syncs = "--sim-syncs" in args
    args = [a for a in args if a != "--sim-syncs"]
    pid = None
    if "--pid" in args:
        i = args.index("--pid")
        pid = int(args[i + 1])
        del args[i:i + 2]
    trace_pid = pid
    if "--trace-pid" in args:
        i = args.index("--trace-pid")
        trace_pid = int(args[i + 1])
        del args[i:i + 2]
    trace_path, truth_path, probed_path = args
    trace = json.load(open(trace_path))
    global TS_BASE_NS
    TS_BASE_NS = trace["gpubpf"].get("ts_base_ns", 0)
    truth = load_truth(truth_path)
    probed = {l.split()[0]: l.split()[2] for l in open(probed_path) if l.strip()}

    events = [e for e in trace["traceEvents"] if e.get("cat") == "cuda_api"]
    pids = sorted({c["pid"] for c in truth}) if pid is None else [pid]
    for p in pids:
        tcalls = [c for c in truth if c["pid"] == p and c["name"] in probed]
        evs = [e for e in events if e["pid"] == (trace_pid if p == pid else p)]
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
                names_by_handle[hexval(a.get("handle", a.get("func", "0x0")))] = \
                    a.get("name", a.get("kernel"))

        # calls of one thread are ordered; match them per name and thread
        by_key = collections.defaultdict(list)
        for e in sorted(evs, key=lambda e: e["ts"]):
            by_key[e["name"], e["tid"]].append(e)
        want_tids = collections.Counter((c["name"], c["tid"]) for c in tcalls)
        got_tids = collections.Counter((e["name"], e["tid"]) for e in evs)
        tid_bad = ["%s: %d calls on tid %d, workload made %d"
                   % (k[0], got_tids.get(k, 0), k[1], n)
                   for k, n in want_tids.items() if got_tids.get(k, 0) != n]
        time_bad, arg_bad = [], []
        for key in want_tids:
            name = key[0]
            tc_list = sorted([c for c in tcalls if (c["name"], c["tid"]) == key],
                             key=lambda c: t_bounds(c)[0])
            for tc, ev in zip(tc_list, by_key.get(key, [])):
                t0, t1 = t_bounds(tc)
                ts_ns = abs_ns(ev["ts"])
                end_ns = abs_ns(ev["ts"] + ev["dur"])
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
        if sim_syncs:
            check_syncs(p, tcalls, evs)
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
