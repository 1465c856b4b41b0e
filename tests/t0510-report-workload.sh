#!/usr/bin/env bash
# gpubpf report on a recording of a workload with a known schedule
# (report_workload.py on the simulated driver): every figure against
# the ground truth computed from the workload's own log of its calls.
. "$(dirname "$0")/lib.sh"
test_description "report: figures of a recorded known schedule against ground truth"
require_bpf
require_sim
require_file "$SIMINJ"
export LD_LIBRARY_PATH="$SIMLIB"
wl="$GPUBPF_ROOT/tests/py/report_workload.py"

check "record the workload (the report follows)" "$GPUBPF" record -o "$TMPD/w.json" -- \
	"$PY" "$wl" --truth "$TMPD/truth.json"
like "record prints the report at the end" "$(cat "$TMPD/.check.out")" "gpubpf report: .*w.json.*sync hotspots"
# record reports on its model, report on the file: the same text
sed -n '/^gpubpf report: /,$p' "$TMPD/.check.out" >"$TMPD/record.txt"
"$GPUBPF" report "$TMPD/w.json" >"$TMPD/report.txt" 2>&1
check "record's report (of its model) is report's of the file, byte for byte" \
	cmp "$TMPD/record.txt" "$TMPD/report.txt"
# the importer gives back the model record wrote (stacks, scopes, GPU records, counters)
check "the trace imported and exported again is the same file" \
	"$GPUBPF_ROOT/build/tests/test_trace_import" "$TMPD/w.json"
"$GPUBPF" record --quiet --sample-rate 2 -o "$TMPD/q.json" -- "$PY" "$wl" \
	--truth "$TMPD/q.truth.json" --steps 3 >"$TMPD/q.out" 2>&1
check_fails "record --quiet prints no report" grep -q "gpubpf report" "$TMPD/q.out"
MIB='[e["args"]["bytes"] >> 20 for e in ev if e.get("ph") == "C" and e["name"] == "device memory GPU 0"]'
is "counter track: device memory at every change" "$(json_query "$TMPD/w.json" "$MIB")" \
	'[64, 96, 64, 192, 64, 0]'
is "counter track, --sample-rate 2: every 2nd change, the peak and the last" \
	"$(json_query "$TMPD/q.json" "$MIB")" '[64, 64, 192, 64, 0]'
is "counter samples are in time order with the events" "$(json_query "$TMPD/w.json" \
	'all(a["ts"] <= b["ts"] for a, b in zip([e for e in ev if "ts" in e and e["ph"] != "f"], [e for e in ev if "ts" in e and e["ph"] != "f"][1:]) if a["ph"] == "C" or b["ph"] == "C")')" true
check_fails "record: a bad --sample-rate is refused" "$GPUBPF" record --sample-rate x -o "$TMPD/x.json" -- true
check "report --format json" "$GPUBPF" report --format json -o "$TMPD/r.json" "$TMPD/w.json"

cat >"$TMPD/check.py" <<'PYEOF'
import json, sys
rep = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
wl = open(sys.argv[3]).read().splitlines()
SYNC_LINE = next(i + 1 for i, l in enumerate(wl) if "SYNC_LINE" in l)
PEAK_LINE = next(i + 1 for i, l in enumerate(wl) if "PEAK_LINE" in l)
MiB = 1 << 20
ms = 1e6


def ok(cond, desc, *diag):
    print(("ok - " if cond else "not ok - ") + desc)
    if not cond:
        for d in diag:
            print("# " + str(d))


def near(got, want, desc, rel=0.10, abs_ms=2.0):
    ok(abs(got - want) <= max(rel * abs(want), abs_ms), "%s: %.3f ~ %.3f" % (desc, got, want),
       "tolerance: %d%% or %.1f ms" % (rel * 100, abs_ms))


p = rep["processes"]
ok(len(p) == 1, "one process")
p = p[0]
# the schedule: one stream, kernels run in launch order, each as long as asked
launches = [c for c in truth if c["name"].startswith("cuLaunchKernel")]
syncs = [c for c in truth if "Synchronize" in c["name"]]
start = end = None
busy = host = sync = other = 0
sync_idle = 0
for c in launches:
    L = c["t0_ns"]
    dur = c["args"]["duration_us"] * 1000
    s = L if end is None or L > end else end
    if end is not None and s > end:
        # a sync under way as the GPU went idle is charged up to its own duration
        y = [y for y in syncs if y["t0_ns"] <= end <= y["t1_ns"] + 50000]
        sb = min(s - end, y[-1]["t1_ns"] - y[-1]["t0_ns"]) if y else 0
        sync += sb
        host += s - end - sb
        if y and y[-1]["name"] == "cuStreamSynchronize":
            sync_idle += sb
    start = s if start is None else start
    end = s + dur
    busy += dur
d = p["devices"]
ok(len(d) == 1 and d[0]["device"] == 0, "one device, 0")
d = d[0]
near(d["busy_ms"], busy / ms, "busy ms (kernel durations of the schedule)", rel=0.005, abs_ms=0.05)
near(d["span_ms"], (end - start) / ms, "span ms")
near(d["gpu_usage_ratio"], busy / (end - start), "gpu_usage_ratio", rel=0.10, abs_ms=0.02)
near(d["idle"]["host_bound_ms"], host / ms, "host-bound idle ms (the sleeps between launches)")
near(d["idle"]["sync_bound_ms"], sync / ms, "sync-bound idle ms (after the sync)")
# other: launch latency, from each launch call to its kernel's start, both
# as the trace has them (the simulated GPU's streams start late on a busy
# machine)
tr = json.load(open(sys.argv[4]))["traceEvents"]
call = {e["args"]["correlation"]: e["ts"] for e in tr
        if e.get("cat") == "cuda_api" and "correlation" in e["args"]}
kern = sorted((e for e in tr if e.get("cat") in ("kernel", "nccl")), key=lambda e: e["ts"])
latency, prev_end = 0, None
for k in kern:
    L = call.get(k["args"]["correlation"], k["ts"])
    if prev_end is not None and k["ts"] > prev_end:
        latency += k["ts"] - max(L, prev_end)
    prev_end = max(prev_end or 0, k["ts"] + k["dur"])
ok(len(kern) == len(launches) and all(k["args"]["correlation"] in call for k in kern),
   "a kernel in the trace for each launch, with its call", len(kern), len(launches))
near(d["idle"]["other_ms"], latency / 1000, "other idle ms (launch latency only)", abs_ms=0.05)
ok(abs(d["idle"]["host_bound_ms"] + d["idle"]["sync_bound_ms"] + d["idle"]["other_ms"]
       - (d["span_ms"] - d["busy_ms"])) < 0.01, "the idle parts add up to span - busy")
# the sync hotspot
truth_sync = [c for c in truth if c["name"] == "cuStreamSynchronize"][0]
hs = [h for h in p["sync_hotspots"] if h["call"] == "cuStreamSynchronize"]
ok(len(hs) == 1 and hs[0]["count"] == 1, "one cuStreamSynchronize hotspot, count 1", hs)
h = hs[0]
if rep["stacks"]:
    ok(h["site"].endswith("report_workload.py:%d" % SYNC_LINE) and h["function"] == "sync_point",
       "hotspot at the sync line, report_workload.py:%d sync_point" % SYNC_LINE, h)
else:
    ok(h["site"] is None, "no stacks: hotspot site unknown", h)
near(h["blocked_ms"], (truth_sync["t1_ns"] - truth_sync["t0_ns"]) / ms, "hotspot blocked ms", abs_ms=0.5)
near(h["gpu_idle_ms"], sync_idle / ms, "hotspot GPU idle ms", abs_ms=0.5)
ok(p["sync_hotspots"][0]["call"] == "cuStreamSynchronize", "the costliest hotspot comes first")
# communication
c = p["comm_overlap"]
ok([(x["kernel"], x["same_stream_as_compute"], x["exposed_fraction"], x["count"]) for x in c] ==
   [("ncclDevKernel_AllReduce_Sum_f32_RING_LL", True, 1, 1)],
   "NCCL kernel on the compute stream, fully exposed", c)
near(c[0]["total_ms"], 3.0, "NCCL kernel time", rel=0.005, abs_ms=0.01)
# kernels
tk = {k["name"]: k for k in p["top_kernels"]}
ok(tk["compute"]["count"] == 9, "compute: 9 kernels")
near(tk["compute"]["total_ms"], 17.5, "compute: 17.5 ms", rel=0.005, abs_ms=0.01)
ok(p["top_kernels"][0]["name"] == "compute", "the longest kernel first")
near(sum(k["share_of_kernel_time"] for k in p["top_kernels"]), 1.0, "kernel shares add up to 1", abs_ms=0.001)
# iterations
it = p["iterations"]
steps = [c for c in launches if c["args"]["kernel"] == "fwd"]
want = (steps[-1]["t0_ns"] - steps[0]["t0_ns"]) / (len(steps) - 1) / ms
ok(it["detected"] and it["kernels_per_step"] == 3 and it["steps"] == len(steps) - 1,
   "iterations: %d steps of 3 kernels" % (len(steps) - 1), it)
near(it["step_ms"]["mean"], want, "mean step time")
ok(it["source"] == ("python_stack" if rep["stacks"] else "launch_sequence"), "iterations source")
# memory
m = p["memory"]
ok(len(m) == 1 and m[0]["peak_bytes"] == 192 * MiB and m[0]["peak_call"] == "cuMemAllocAsync" and
   m[0]["peak_alloc_bytes"] == 128 * MiB and m[0]["allocs"] == 3 and m[0]["frees"] == 3 and
   m[0]["end_bytes"] == 0, "memory: peak 192 MiB reached by the 128 MiB cuMemAllocAsync", m)
if rep["stacks"]:
    ok(m[0]["peak_site"].endswith("report_workload.py:%d" % PEAK_LINE) and
       m[0]["peak_function"] == "grow", "memory: the peak's Python line", m)
PYEOF
tap_from "$PY" "$TMPD/check.py" "$TMPD/r.json" "$TMPD/truth.json" "$wl" "$TMPD/w.json"

check "memory svg" "$GPUBPF" report -o "$TMPD/r.txt" --memory-svg "$TMPD/m.svg" "$TMPD/w.json"
is "svg: the 3 allocations" "$(grep -c '<title>' "$TMPD/m.svg")" 3
like "svg: the peak marked" "$(cat "$TMPD/m.svg")" "peak 192.00 MiB"
done_testing
