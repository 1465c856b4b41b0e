#!/usr/bin/env python3
"""Check a gpubpf trace as Perfetto's own importer reads it.

usage: check_perfetto.py TRACE [--no-flows]

Imports TRACE with trace_processor_shell (Perfetto v58.2: what
ui.perfetto.dev shows) and prints TAP lines (no plan: the caller counts
them, see tests/lib.sh's perfetto_ok).  Checks:
  - the import reports no error and no data loss;
  - every GPU slice (kernel, nccl, gpu_memcpy, gpu_memset) whose
    correlation id is that of a driver call of its process is reached by
    exactly one flow, and that flow starts on that call; no other flow
    exists but those between thread state slices (a GIL wait and its
    holder's state: tests/check_gil_flows.py) (unless --no-flows: then
    there must be none);
  - every driver call with a Python stack is a child of the slice of its
    innermost frame's function ("python" slice, args.function), or, for
    calls without a stack or with an attributed one (stack_attributed:
    walked on another thread), of no python slice at all.
Arguments are "args.*" in JSON traces, "debug.*" (debug annotations) in
.pftrace ones, where a stack is one string, its frames one a line
(args.stack[0] is the first line of debug.stack); GPU slices are on thread tracks in JSON, on tracks of their
process in .pftrace.
The trace_processor binary is $TRACE_PROCESSOR; the caller skips when it
is absent.  Exit status 1 if a check failed.
"""
import csv
import io
import os
import re
import subprocess
import sys

from tap import exit_status, ok

GPU_CATS = "('kernel', 'nccl', 'gpu_memcpy', 'gpu_memset')"


def query(tp, trace, sql):
    """Rows (dicts) of one SQL query on trace."""
    out = subprocess.run([tp, "query", trace], input=sql, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError("trace_processor failed: " + out.stderr[-2000:])
    text = out.stdout.strip()
    rows = list(csv.DictReader(io.StringIO(text))) if text else []
    # trace_processor prints SQL NULL as [NULL]
    return [{k: (None if v == "[NULL]" else v) for k, v in r.items()} for r in rows]


def check_import(tp, trace):
    rows = query(tp, trace, """
        select name, idx, value from stats
        where severity in ('error', 'data_loss') and value > 0""")
    ok(not rows, "Perfetto imports %s without errors" % os.path.basename(trace),
       "\n".join("%s[%s] = %s" % (r["name"], r["idx"], r["value"]) for r in rows))


def arg(slice_, key, column="int_value"):
    """SQL for a slice's argument key, in either format."""
    return """(select %s from args a where a.arg_set_id = %s.arg_set_id
            and a.key in ('args.%s', 'debug.%s'))""" % (column, slice_, key, key)


CORR = arg("%s", "correlation")
# the process of a slice: its thread's (thread track) or its own (process track)
UPID = """coalesce((select t.upid from thread_track tt join thread t using (utid)
            where tt.id = s.track_id),
          (select pt.upid from process_track pt where pt.id = s.track_id))"""


def check_flows(tp, trace, want_flows):
    gpu = query(tp, trace, """
        select s.id, s.name, %s as corr, %s as upid from slice s
        where s.category in %s""" % (CORR % "s", UPID, GPU_CATS))
    calls = query(tp, trace, """
        select s.id, %s as corr, %s as upid from slice s
        where s.category = 'cuda_api' and %s is not null""" % (CORR % "s", UPID, CORR % "s"))
    flows = query(tp, trace, """
        select slice_out, slice_in from flow f
        where not exists (select 1 from slice s where s.id in (f.slice_out, f.slice_in)
                          and s.category = 'thread_state')""")
    if not want_flows:
        ok(not flows, "no flows", "%d flows" % len(flows))
        return
    call_of = {(c["upid"], c["corr"]): c["id"] for c in calls}
    into = {}
    for f in flows:
        into.setdefault(f["slice_in"], []).append(f["slice_out"])
    wrong = []
    linked = 0
    for g in gpu:
        want = call_of.get((g["upid"], g["corr"])) if g["corr"] else None
        got = into.pop(g["id"], [])
        if want is None:
            if got:
                wrong.append("%s (corr %s): %d flows, no call" % (g["name"], g["corr"], len(got)))
            continue
        linked += 1
        if got != [want]:
            wrong.append("%s (corr %s): flows from %s, call is %s" %
                         (g["name"], g["corr"], got, want))
    stray = sum(len(v) for v in into.values())
    ok(not wrong and not stray,
       "each of %d GPU slices with a recorded call has exactly one flow, from that call" % linked,
       "\n".join(wrong[:10] + (["%d flows end on no GPU slice" % stray] if stray else [])))


FRAME = re.compile(r"^(.*) \((.*):\d+\)$")


def check_nesting(tp, trace):
    rows = query(tp, trace, """
        select s.id, s.name,
          coalesce(%s, %s) as stack,
          %s as attributed,
          p.category as pcat,
          %s as pfunc
        from slice s left join slice p on s.parent_id = p.id
        where s.category = 'cuda_api'""" % (arg("s", "stack[0]", "display_value"),
                                             arg("s", "stack", "display_value"),
                                             arg("s", "stack_attributed", "display_value"),
                                             arg("p", "function", "display_value")))
    wrong = []
    nstack = 0
    for r in rows:
        r["frame"] = r["stack"].split("\n")[0] if r["stack"] else None
        if r["attributed"] in ("true", "1", "True"):
            r["frame"] = None
        if not r["frame"]:
            if r["pcat"] == "python":
                wrong.append("%s (no stack) under python slice %s" % (r["name"], r["pfunc"]))
            continue
        nstack += 1
        m = FRAME.match(r["frame"])
        want = "%s (%s)" % (m.group(1), m.group(2)) if m else None
        if r["pcat"] != "python" or r["pfunc"] != want:
            wrong.append("%s at %s: parent %s %s" % (r["name"], r["frame"], r["pcat"], r["pfunc"]))
    ok(not wrong, "each of %d calls with a stack lies in its innermost function's slice" % nstack,
       "%d wrong of %d calls\n" % (len(wrong), len(rows)) + "\n".join(wrong[:10]))


def main():
    args = sys.argv[1:]
    want_flows = "--no-flows" not in args
    args = [a for a in args if a != "--no-flows"]
    if len(args) != 1:
        sys.exit(__doc__.split("\n\n")[1])
    tp = os.environ.get("TRACE_PROCESSOR")
    if not tp:
        sys.exit("check_perfetto.py: TRACE_PROCESSOR is not set")
    check_import(tp, args[0])
    check_flows(tp, args[0], want_flows)
    check_nesting(tp, args[0])
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
