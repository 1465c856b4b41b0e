#!/usr/bin/env bash
# gpubpf report's findings and iteration anatomy on a recorded training
# loop with known problems (findings_workload.py on the simulated driver):
# a slow collate, an .item() sync, an all-reduce on the compute stream and
# work after the optimizer step come out in that order, each at its line;
# the loop's phases in order.
. "$(dirname "$0")/lib.sh"
test_description "report: findings and anatomy of a recorded loop with known problems"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
wl="$GPUBPF_ROOT/tests/py/findings_workload.py"

check "record the loop" "$GPUBPF" record --quiet -o "$TMPD/w.json" -- \
	"$PY" "$wl"
check "report --format json" "$GPUBPF" report --format json -o "$TMPD/r.json" "$TMPD/w.json"
"$GPUBPF" report "$TMPD/w.json" >"$TMPD/r.txt"
like "text: the findings open the process's report" "$(sed -n 3,4p "$TMPD/r.txt")" \
	"^process .*
  findings \(costliest first"

cat >"$TMPD/check.py" <<'PYEOF'
import json, sys
rep = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read().splitlines()
line = {m: next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# " + m))
        for m in ("LOAD_LINE", "ITEM_LINE", "COMM_LINE", "TAIL_LINE")}


def ok(cond, desc, *diag):
    print(("ok - " if cond else "not ok - ") + desc)
    if not cond:
        for d in diag:
            print("# " + str(d))


p = rep["processes"][0]
f = p["findings"]
want = [("host_bound", "load_batch", line["LOAD_LINE"]), ("sync", "loss_item", line["ITEM_LINE"]),
        ("serialised_comm", "allreduce", line["COMM_LINE"]), ("wasted_work", "main", line["TAIL_LINE"])]
got = [(x["kind"], x["site"]) for x in f[:4]]
ok(len(f) >= 4 and all(k == w[0] and s and s.startswith(w[1] + " (") and
                       s.endswith("findings_workload.py:%d)" % w[2]) for (k, s), w in zip(got, want)),
   "findings: the collate, the .item() sync, the all-reduce, the tail, each at its line", got, want)
ok(all(a["cost_ms"] >= b["cost_ms"] for a, b in zip(f, f[1:])), "findings: costliest first")
ok(abs(f[2]["cost_ms"] - 18.0) < 0.05, "the all-reduce costs its 6 x 3 ms, all exposed", f[2])
ok(f[0]["cost_ms"] > 5 * 10, "the collate: over 10 ms of GPU idle in each of 5 gaps", f[0])
ok(abs(f[3]["cost_ms"] - 10.0) < 0.05, "the tail: 2 ms of GPU time in each of 5 steps", f[3])
it = p["iterations"]
ok(it["detected"] and it["steps"] == 5 and it["kernels_per_step"] == 10 and
   it["loop_function"].startswith("main ("), "iterations: 5 steps of 10 launches in main()'s loop", it)
ph = [(x["phase"], round(x["gpu_ms_median"], 2), x["launches_median"]) for x in it["phases"]]
ok(ph == [("load_batch", 0.3, 1), ("forward", 4.5, 3), ("loss_item", 0.0, 0), ("backward", 3.0, 3),
          ("allreduce", 3.0, 1), ("step", 0.1, 1), ("postprocess", 2.0, 1), ("outside any phase", 0.0, 0)],
   "anatomy: the loop's phases in order, their GPU ms and launches", ph)
host = {x["phase"]: x["host_ms_median"] for x in it["phases"]}
ok(20 <= host["load_batch"] < 30, "anatomy: the collate's 20 ms of host time in load_batch", host)
ok(abs(sum(host.values()) - it["step_ms"]["median"]) < 0.5 * it["step_ms"]["median"],
   "anatomy: host times about add up to the step", host, it["step_ms"])
PYEOF
tap_from "$PY" "$TMPD/check.py" "$TMPD/r.json" "$wl"
done_testing
