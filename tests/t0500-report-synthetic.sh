#!/usr/bin/env bash
# gpubpf report on synthetic traces of a known schedule (exact figures, see
# gen_report_trace.py), on bad inputs, and on a trace without GPU work.
. "$(dirname "$0")/lib.sh"
test_description "report: every figure of a known synthetic schedule; bad inputs"
require_gpubpf
gen="$GPUBPF_ROOT/tests/py/gen_report_trace.py"
"$PY" "$gen" known "$TMPD/k.json" || bail_out "cannot generate the trace"
# idle_split NAME: host-bound, sync-bound and other ms of NAME.rep.json's
# first process's first device
idle_split() {
	json_query "$TMPD/$1.rep.json" \
		'(lambda i: [round(i[k], 6) for k in ("host_bound_ms", "sync_bound_ms", "other_ms")])(d["processes"][0]["devices"][0]["idle"])'
}
# gen_report KIND NAME DESC: gen_report_trace.py's KIND trace as NAME.json,
# and its JSON report as NAME.rep.json (one result: DESC)
gen_report() {
	"$PY" "$gen" "$1" "$TMPD/$2.json" || bail_out "cannot generate the $1 trace"
	check "$3" "$GPUBPF" report --format json -o "$TMPD/$2.rep.json" "$TMPD/$2.json"
}

check "report --format json" "$GPUBPF" report --format json -o "$TMPD/k.rep.json" \
	--memory-svg "$TMPD/k.svg" "$TMPD/k.json"
q() { json_query "$TMPD/k.rep.json" "$1"; }
P1='[p for p in d["processes"] if p["pid"] == 100][0]'
P2='[p for p in d["processes"] if p["pid"] == 200][0]'
is "findings, costliest first: host-bound gaps, exposed all-reduces, the sync" "$(q "[(f['kind'], round(f['cost_ms'], 6), f['site'], f['count']) for f in $P1['findings']]")" \
	'[["host_bound", 0.155, "step (/home/u/train.py:41)", 2], ["serialised_comm", 0.1, "step (/home/u/train.py:41)", 1], ["sync", 0.09, "step (/home/u/train.py:42)", 1], ["serialised_comm", 0.02, "step (/home/u/train.py:41)", 1]]'
like "findings: the all-reduce on the compute stream says so" "$(q "$P1['findings'][1]['detail']")" "stream 7: 0.100 of 0.100 ms .*serialised"
# pid 200's gaps (us): set-up 3 + 3 + 973, in each step 4 x 85, between steps 8 x 585 + 1085
is "findings: the launch-bound stream takes its host-bound gaps" "$(q "[(f['kind'], round(f['cost_ms'], 6), f['site'], f['count']) for f in $P2['findings']]")" \
	'[["launch_bound", 10.144, "Net.forward (/home/u/loop.py:20)", 52]]'
is "device 0 usage, busy, span" "$(q "[(x['device'], round(x['gpu_usage_ratio'], 6), round(x['busy_ms'], 6), round(x['span_ms'], 6)) for x in $P1['devices']]")" \
	'[[0, 0.68, 0.68, 1.0]]'
is "idle: host-bound, sync-bound, other" "$(q "[round(v, 6) for v in (lambda i: (i['host_bound_ms'], i['sync_bound_ms'], i['other_ms']))($P1['devices'][0]['idle'])]")" \
	'[0.155, 0.09, 0.075]'
is "sync hotspot at the user frame, not the library's" "$(q "[(h['site'], h['function'], h['call'], h['count'], round(h['blocked_ms'], 6), round(h['gpu_idle_ms'], 6)) for h in $P1['sync_hotspots']]")" \
	'[["/home/u/train.py:42", "step", "cuStreamSynchronize", 1, 0.152, 0.09]]'
is "communication overlap" "$(q "sorted((c['stream'], c['same_stream_as_compute'], float(round(c['exposed_fraction'], 6)), c['count']) for c in $P1['comm_overlap'])")" \
	'[[7, true, 1.0, 1], [13, false, 0.2, 1]]'
is "top kernels" "$(q "[(k['name'], k['count'], round(k['total_ms'], 6), round(k['share_of_kernel_time'], 4)) for k in $P1['top_kernels']]")" \
	'[["gemm", 4, 0.4, 0.5714], ["ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2, 0.2, 0.2857], ["relu", 2, 0.1, 0.1429]]'
is "top call by host time" "$(q "(lambda c: (c['name'], c['count'], round(c['total_ms'], 6)))($P1['top_calls'][0])")" \
	'["cuStreamSynchronize", 1, 0.152]'
is "memory: peak, its time and line; host and failed allocations ignored" "$(q "[(m['device'], m['allocs'], m['frees'], m['peak_bytes'], round(m['peak_ms'], 6), m['peak_site'], m['peak_function'], m['peak_call'], m['end_bytes']) for m in $P1['memory']]")" \
	'[[0, 4, 2, 5500, 0.521, "/home/u/train.py:46", "step", "cuMemCreate", 3500]]'
is "iterations from the Python stacks" "$(q "(lambda i: (i['detected'], i['source'], i['steps'], i['kernels_per_step'], i['anchor_kernel'], round(i['step_ms']['mean'], 4), round(i['step_ms']['median'], 6), round(i['step_ms']['min'], 6), round(i['step_ms']['max'], 6)))($P2['iterations'])")" \
	'[true, "python_stack", 9, 5, "A", 1.0556, 1.0, 1.0, 1.5]'
is "launch-bound stream" "$(q "[(s['stream'], s['kernels'], s['median_kernel_us'], s['median_gap_us'], s['launch_bound']) for s in $P2['streams']]")" \
	'[[1, 53, 10, 90, true]]'
is "no launch-bound stream where kernels are back to back" "$(q "[s['launch_bound'] for s in $P1['streams']]")" '[false, false]'

# without stacks: the same figures, sites unknown, iterations from the launch sequence
"$PY" - "$TMPD/k.json" "$TMPD/ns.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["traceEvents"]:
    e.get("args", {}).pop("stack", None)
json.dump(d, open(sys.argv[2], "w"))
PYEOF
check "report without stacks" "$GPUBPF" report --format json -o "$TMPD/ns.rep.json" "$TMPD/ns.json"
is "no stacks: hotspot site unknown, same numbers" "$(json_query "$TMPD/ns.rep.json" "[(h['site'], h['function'], h['count'], round(h['gpu_idle_ms'], 6)) for h in $P1['sync_hotspots']]")" \
	'[[null, null, 1, 0.09]]'
is "no stacks: the same findings, sites unknown" "$(json_query "$TMPD/ns.rep.json" "[(f['kind'], round(f['cost_ms'], 6), f['site']) for f in $P1['findings']]")" \
	'[["host_bound", 0.155, null], ["serialised_comm", 0.1, null], ["sync", 0.09, null], ["serialised_comm", 0.02, null]]'
# stacks that are empty or not lists read as none (an empty first one was
# undefined behaviour, caught by UBSan under t0700)
for kind in empty number; do
	"$PY" - "$TMPD/k.json" "$TMPD/s-$kind.json" "$kind" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["traceEvents"]:
    if "stack" in e.get("args", {}):
        e["args"]["stack"] = [] if sys.argv[3] == "empty" else 5
json.dump(d, open(sys.argv[2], "w"))
PYEOF
	check "report with $kind stacks" "$GPUBPF" report --format json -o "$TMPD/s-$kind.rep.json" "$TMPD/s-$kind.json"
	is "... the figures of no stacks" "$(json_query "$TMPD/s-$kind.rep.json" "[(h['site'], h['function'], h['count'], round(h['gpu_idle_ms'], 6)) for h in $P1['sync_hotspots']]")" \
		'[[null, null, 1, 0.09]]'
done
is "no stacks: iterations from the launch sequence" "$(json_query "$TMPD/ns.rep.json" "(lambda i: (i['source'], i['steps'], i['kernels_per_step']))($P2['iterations'])")" \
	'["launch_sequence", 9, 5]'
"$GPUBPF" report "$TMPD/ns.json" >"$TMPD/ns.txt"
like "text: says the stack is unknown" "$(cat "$TMPD/ns.txt")" "stack unknown  \[cuStreamSynchronize\]"
"$GPUBPF" report "$TMPD/k.json" >"$TMPD/k.txt"
like "text: usage and idle split" "$(cat "$TMPD/k.txt")" \
	"GPU 0: busy 68.0% \(0.680 ms of a 1.000 ms span.*host-bound 0.155 ms \(48%\), sync-bound 0.090 ms \(28%\), other 0.075 ms \(23%\)"
like "text: the findings come first" "$(sed -n 4,5p "$TMPD/k.txt")" \
	"findings \(costliest first.*
    1. host_bound +0.155 ms  step \(/home/u/train.py:41\)"
like "text: hotspot line" "$(cat "$TMPD/k.txt")" "1        0.152        0.090  step \(/home/u/train.py:42\)"
like "svg: blocks, peak and legend" "$(cat "$TMPD/k.svg")" "<svg .*<rect .*peak 0.01 MiB.*step \(/home/u/train.py:46\).*call sites by bytes allocated"
is "svg: one block per device allocation" "$(grep -c '<title>' "$TMPD/k.svg")" 4
check "svg is well-formed XML" "$PY" -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$TMPD/k.svg"

# host-bound gaps by the launching thread's state (gen_report_trace.py states)
gen_report states s "report the states trace"
CAUSES='[(c["cause"], c["site"], round(c["ms"], 6)) for c in d["processes"][0]["devices"][0]["idle"]["host_bound_causes"]]'
SCAUSES='[["other", "step (/home/u/train.py:43)", 0.18], ["running", "collate (/home/u/data.py:7)", 0.135], ["gil_wait", "step (/home/u/train.py:41)", 0.11], ["lock_wait", "step (/home/u/train.py:42)", 0.05], ["sleep", "step (/home/u/train.py:42)", 0.05], ["running", "log_metrics (/home/u/train.py:30)", 0.045], ["runnable", "step (/home/u/train.py:41)", 0.04], ["io", "step (/home/u/train.py:41)", 0.04], ["running", "step (/home/u/train.py:43)", 0.015], ["running", "step (/home/u/train.py:41)", 0.01]]'
is "states: host-bound causes, costliest first; running at its samples' sites" \
	"$(json_query "$TMPD/s.rep.json" "$CAUSES")" "$SCAUSES"
is "states: the causes sum to host_bound_ms" "$(json_query "$TMPD/s.rep.json" \
	'(lambda i: [round(sum(c["ms"] for c in i["host_bound_causes"]), 6), i["host_bound_ms"]])(d["processes"][0]["devices"][0]["idle"])')" \
	'[0.675, 0.675]'
is "states: host_bound findings name the dominant cause" "$(json_query "$TMPD/s.rep.json" \
	'[(f["site"], round(f["cost_ms"], 6), f["detail"].split("; ")[1]) for f in d["processes"][0]["findings"]]')" \
	'[["step (/home/u/train.py:41)", 0.29, "the launching thread was most often waiting for the GIL (gil_wait, 38% of that time)"], ["step (/home/u/train.py:43)", 0.195, "the launching thread was most often in another wait, or not traced (other, 92% of that time)"], ["step (/home/u/train.py:42)", 0.19, "the launching thread was most often running on a CPU (running, 47% of that time)"]]'
"$GPUBPF" report "$TMPD/s.json" >"$TMPD/s.txt"
like "states: text block under the idle line, costliest first" "$(cat "$TMPD/s.txt")" \
	"host-bound 0.675 ms .*
      host-bound, by what the launching thread was doing:
 +0.180 ms \( 27%\)  other +step \(/home/u/train.py:43\)
 +0.135 ms \( 20%\)  running +collate \(/home/u/data.py:7\)"
# a sync is charged no more GPU idle than it blocked: a 4 ms gap after an
# 11 us sync is host-bound (gen_report_trace.py shortsync)
gen_report shortsync ss "report the shortsync trace"
is "shortsync: host-bound, sync-bound, other" "$(idle_split ss)" \
	"[3.99, 0.011, 0.004]"
is "shortsync: the hotspot's GPU idle is the sync's 11 us" "$(json_query "$TMPD/ss.rep.json" \
	'[(h["site"], round(h["blocked_ms"], 6), round(h["gpu_idle_ms"], 6)) for h in d["processes"][0]["sync_hotspots"]]')" \
	'[["/home/u/s.py:5", 0.011, 0.011]]'
is "shortsync: the host-bound finding at the late launch's line comes first" "$(json_query "$TMPD/ss.rep.json" \
	'[(f["kind"], f["site"], round(f["cost_ms"], 6)) for f in d["processes"][0]["findings"]]')" \
	'[["host_bound", "step (/home/u/s.py:7)", 3.99], ["sync", "step (/home/u/s.py:5)", 0.011]]'
# the sync that drained the queue is the longest in progress as the GPU
# went idle, however many others started after it (gen_report_trace.py
# drained: a short poll of another thread that ended later took the gap,
# and past 512 syncs started after it the main one was not seen)
gen_report drained dr "report the drained trace"
is "drained: host-bound, sync-bound, other" "$(idle_split dr)" \
	"[0.0, 4.99, 0.01]"
is "drained: the GPU idle on the main thread's sync" "$(json_query "$TMPD/dr.rep.json" \
	'[(h["site"], h["count"], round(h["gpu_idle_ms"], 6)) for h in d["processes"][0]["sync_hotspots"]]')" \
	'[["/home/u/d.py:20", 1, 4.99], ["/home/u/d.py:50", 601, 0.0]]'
# steps from the launch sequence lie in the run that repeats: the anchor
# kernel's set-up launches and a lone one after the loop are not steps
# (gen_report_trace.py setup: they made 12 steps of 0.01 to 9.88 ms)
gen_report setup su "report the setup trace"
is "setup: 9 steps of 1 ms, anchored at A" "$(json_query "$TMPD/su.rep.json" \
	'(lambda i: [i["source"], i["steps"], i["anchor_kernel"], i["kernels_per_step"]] + [round(i["step_ms"][k], 6) for k in ("mean", "min", "max", "stddev")])(d["processes"][0]["iterations"])')" \
	'["launch_sequence", 9, "A", 4, 1.0, 1.0, 1.0, 0.0]'
# a job installed in dist-packages and run with -m: no frame is user code,
# so each stack's innermost frame that is not frozen is its site, where it
# was unknown (gen_report_trace.py installed)
gen_report installed in "report the installed trace"
PKG=/usr/local/lib/python3.11/dist-packages
is "installed: the sync hotspot at the package's line" "$(json_query "$TMPD/in.rep.json" \
	'[(h["site"], h["function"], h["call"], round(h["gpu_idle_ms"], 6)) for h in d["processes"][0]["sync_hotspots"]]')" \
	"[[\"$PKG/trainpkg/loop.py:30\", \"train_loop\", \"cuStreamSynchronize\", 0.011]]"
is "installed: the late launch's finding at its innermost frame, torch's" "$(json_query "$TMPD/in.rep.json" \
	'[(f["kind"], f["site"], round(f["cost_ms"], 6)) for f in d["processes"][0]["findings"]]')" \
	"[[\"host_bound\", \"Linear.forward ($PKG/torch/nn/modules/linear.py:116)\", 3.99], [\"sync\", \"train_loop ($PKG/trainpkg/loop.py:30)\", 0.011]]"
"$GPUBPF" report "$TMPD/in.json" >"$TMPD/in.txt"
like "installed: the text names the line, not an unknown stack" "$(cat "$TMPD/in.txt")" \
	"  1 +0.011 +0.011  train_loop \\($PKG/trainpkg/loop.py:30\\)  \\[cuStreamSynchronize\\]"

# one line making two kinds of blocking call: a hotspot for each, named
# by its call (gen_report_trace.py mixedsync)
gen_report mixedsync ms "report the mixedsync trace"
is "mixedsync: a hotspot per call at the one line, costliest first" "$(json_query "$TMPD/ms.rep.json" \
	'[(h["site"], h["call"], h["count"], round(h["blocked_ms"], 6)) for h in d["processes"][0]["sync_hotspots"]]')" \
	'[["/home/u/m.py:5", "cuMemcpyDtoH_v2", 2, 0.05], ["/home/u/m.py:5", "cuStreamSynchronize", 1, 0.01]]'
is "mixedsync: their GPU idle sums to the sync-bound time" "$(json_query "$TMPD/ms.rep.json" \
	'(lambda p: round(sum(h["gpu_idle_ms"] for h in p["sync_hotspots"]) - p["devices"][0]["idle"]["sync_bound_ms"], 9))(d["processes"][0])')" 0.0
like "mixedsync: each sync finding names its own call" "$(json_query "$TMPD/ms.rep.json" \
	'" | ".join(f["detail"].split(", time")[0] for f in d["processes"][0]["findings"] if f["kind"] == "sync")')" \
	"^2 x cuMemcpyDtoH_v2 blocked the host 0.050 ms \\| 1 x cuStreamSynchronize blocked the host 0.010 ms$"

# kernels 2 ms apart wait for the host's work between launches, not for the
# launches: no launch-bound stream, a host_bound finding (gen_report_trace.py loader)
gen_report loader ld "report the loader trace"
is "loader: its stream, late in every gap, is not launch-bound (gaps over 1 ms)" "$(json_query "$TMPD/ld.rep.json" \
	'[(s["stream"], s["kernels"], s["median_gap_us"], s["late_launch_fraction"], s["launch_bound"]) for s in d["processes"][0]["streams"]]')" \
	'[[3, 10, 2000, 1, false]]'
is "loader: its gaps are a host_bound finding at the launch line" "$(json_query "$TMPD/ld.rep.json" \
	'[(f["kind"], f["site"], round(f["cost_ms"], 6), f["count"]) for f in d["processes"][0]["findings"]]')" \
	'[["host_bound", "load (/home/u/d.py:4)", 17.955, 9]]'

# on a launch-bound stream, a gap over 10 ms is no launch overhead: its own
# host_bound finding (gen_report_trace.py longgap)
gen_report longgap lg "report the longgap trace"
is "longgap: the long gap is host_bound at its line, the rest launch_bound" "$(json_query "$TMPD/lg.rep.json" \
	'[(f["kind"], f["site"], round(f["cost_ms"], 6), f["count"]) for f in d["processes"][0]["findings"]]')" \
	'[["host_bound", "load (/home/u/g.py:3)", 50.085, 1], ["launch_bound", "step (/home/u/g.py:7)", 1.53, 18]]'

# running time in the garbage collector (gen_report_trace.py gc): "gc" at its samples' sites
gen_report gc g "report the gc trace"
is "gc: samples in the collector make gc, at their sites (the launch's without a stack)" \
	"$(json_query "$TMPD/g.rep.json" "$CAUSES")" \
	'[["gc", "step (/home/u/train.py:50)", 0.288333], ["running", "collate (/home/u/data.py:7)", 0.096667], ["gc", "step (/home/u/train.py:51)", 0.095]]'
is "gc: the host_bound finding names it" "$(json_query "$TMPD/g.rep.json" \
	'[(f["site"], round(f["cost_ms"], 6), f["detail"].split("; ")[1]) for f in d["processes"][0]["findings"]]')" \
	'[["step (/home/u/train.py:51)", 0.48, "the launching thread was most often collecting garbage (gc, 80% of that time)"]]'
is "no states in the trace: host-bound time is all other, at the launch sites" \
	"$(q "[(c['cause'], c['site'], round(c['ms'], 6)) for c in $P1['devices'][0]['idle']['host_bound_causes']]")" \
	'[["other", "step (/home/u/train.py:41)", 0.155]]'

# a loop's anatomy: steps from the loop frame train(), phases by its lines (gen_report_trace.py loop)
gen_report loop l "report the loop"
IT='d["processes"][0]["iterations"]'
is "loop: 9 steps of 9 launches, from the loop frame" "$(json_query "$TMPD/l.rep.json" "(lambda i: (i['source'], i['loop_function'], i['steps'], i['kernels_per_step'], i['anchor_kernel'], round(i['step_ms']['median'], 6), round(i['step_ms']['max'], 6)))($IT)")" \
	'["python_stack", "train (/home/u/t.py)", 9, 9, "normalize", 1.0, 1.4]'
is "loop: phases in loop order, GPU and host ms (median, min, max), launches" "$(json_query "$TMPD/l.rep.json" "[(x['phase'], x['site'], round(x['gpu_ms_median'], 6), round(x['host_ms_median'], 6), round(x['host_ms_min'], 6), round(x['host_ms_max'], 6), x['launches_median']) for x in $IT['phases']]")" \
	'[["load_batch", "train (/home/u/t.py:11)", 0.02, 0.14, 0.14, 0.54, 1], ["Model.forward", "train (/home/u/t.py:12)", 0.16, 0.25, 0.25, 0.25, 4], ["Model.backward", "train (/home/u/t.py:13)", 0.16, 0.2, 0.2, 0.2, 2], ["SGD.step", "train (/home/u/t.py:14)", 0.03, 0.15, 0.15, 0.15, 1], ["Tensor.item", "train (/home/u/t.py:15)", 0.005, 0.19, 0.19, 0.19, 0], ["Detector.postprocess", "train (/home/u/t.py:16)", 0.1, 0.02, 0.02, 0.02, 1], ["outside any phase", null, 0.0, 0.05, 0.05, 0.05, 0]]'
is "loop: wasted work after the optimizer step, at its loop line" "$(json_query "$TMPD/l.rep.json" "[(f['site'], round(f['cost_ms'], 6), f['count']) for f in d['processes'][0]['findings'] if f['kind'] == 'wasted_work']")" \
	'[["train (/home/u/t.py:16)", 0.9, 9], ["train (/home/u/t.py:15)", 0.045, 0]]'
is "nested loop: run()'s set-up and tear-down around it, the loop in train_step()" "$(json_query "$TMPD/l.rep.json" "[(i['loop_function'], i['steps'], i['kernels_per_step'], round(i['step_ms']['median'], 6), [x['phase'] for x in i['phases']]) for i in [p['iterations'] for p in d['processes'] if p['pid'] == 301]]")" \
	'[["train_step (/home/u/r.py)", 5, 3, 0.5, ["line 20", "line 21", "outside any phase"]]]'
# repeated work: a kernel run again in every step on the same grid and
# arguments, and its look-alikes that are not (gen_report_trace.py repeats);
# the same read back from a .pftrace
gen_report repeats rp "report the repeats"
RPF="[(f['kind'], round(f['cost_ms'], 6), f['site'], f['count']) for f in d['processes'][0]['findings'] if f['kind'] == 'repeated_work']"
is "repeats: softmax recomputed at Metrics.compute in each of 9 steps, 9 x 50 us; nothing else" \
	"$(json_query "$TMPD/rp.rep.json" "$RPF")" '[["repeated_work", 0.45, "Metrics.compute (/home/u/metrics.py:7)", 9]]'
is "repeats: the finding's detail" "$(json_query "$TMPD/rp.rep.json" "[f['detail'] for f in d['processes'][0]['findings'] if f['kind'] == 'repeated_work']")" \
	'["softmax ran again on the same grid and arguments 9 times in 9 of 9 steps: its output is possibly recomputed from the same inputs"]'
check "repeats: convert to .pftrace" "$GPUBPF" convert "$TMPD/rp.json" "$TMPD/rp.pftrace"
check "repeats: report the .pftrace" "$GPUBPF" report --format json -o "$TMPD/rpp.rep.json" "$TMPD/rp.pftrace"
is "repeats: the same finding from the .pftrace" "$(json_query "$TMPD/rpp.rep.json" "$RPF")" \
	"$(json_query "$TMPD/rp.rep.json" "$RPF")"

"$GPUBPF" report "$TMPD/l.json" >"$TMPD/l.txt"
like "loop: the anatomy in the text" "$(cat "$TMPD/l.txt")" "iteration anatomy .*the loop is train \\(/home/u/t.py\\).*
    Model.forward +0.160 \[0.160-0.160\] +0.250 \[0.250-0.250\] +4  /home/u/t.py:12"

# PyTorch 2's frames between a loop line and the code it runs: each phase is
# named by the first frame that does more than pass the call on, and
# zero_grad() after the step is the optimizer's own work (gen_report_trace.py torchloop)
gen_report torchloop tl "report the torchloop trace"
is "torchloop: phases named past Module._call_impl and decorators' wrappers" "$(json_query "$TMPD/tl.rep.json" \
	'(lambda i: (i["steps"], [x["phase"] for x in i["phases"]]))(d["processes"][0]["iterations"])')" \
	'[9, ["Net.forward", "CrossEntropyLoss.forward", "Tensor.backward", "SGD.step", "Optimizer.zero_grad", "outside any phase"]]'
is "torchloop: no wasted work (zero_grad after the step is the optimizer's)" "$(json_query "$TMPD/tl.rep.json" \
	'[f["site"] for f in d["processes"][0]["findings"] if f["kind"] == "wasted_work"]')" '[]'

# a loop that library code runs under one line of user code (transformers'
# Trainer): found among all frames (gen_report_trace.py trainer)
gen_report trainer tr "report the trainer trace"
is "trainer: the loop in the library, its steps and phases" "$(json_query "$TMPD/tr.rep.json" \
	'(lambda i: (i["source"], i["loop_function"].split(" (")[0], i["steps"], [(x["phase"], x["site"].split(":")[-1]) for x in i["phases"][:-1]]))(d["processes"][0]["iterations"])')" \
	'["python_stack", "Trainer._inner_training_loop", 9, [["Trainer._prepare_inputs", "2550)"], ["Trainer.training_step", "2555)"], ["Accelerator.clip_grad_norm_", "2600)"], ["AcceleratedOptimizer.step", "2620)"], ["Module.zero_grad", "2640)"], ["Trainer._maybe_log_save_evaluate", "2660)"]]]'
is "trainer: no wasted work (zero_grad after the step)" "$(json_query "$TMPD/tr.rep.json" \
	'[f["site"] for f in d["processes"][0]["findings"] if f["kind"] == "wasted_work"]')" '[]'
# in the library's loop, a call's site is its innermost frame unless a
# user frame lies under the loop's line; outside it, its user frame
is "trainer: the sync hotspots at the library's line in the loop, and main's copy at its own" \
	"$(json_query "$TMPD/tr.rep.json" '[(h["function"], h["site"].split("/")[-1], h["call"], h["count"])
 for h in d["processes"][0]["sync_hotspots"]]')" \
	'[["Trainer._maybe_log_save_evaluate", "trainer.py:3100", "cuMemcpyDtoH_v2", 10], ["main", "ft.py:20", "cuMemcpyHtoD_v2", 1]]'
is "trainer: host-bound time at each launch's line: the library's, or the user's compute_loss under the loop" \
	"$(json_query "$TMPD/tr.rep.json" '[c["site"].split(" (")[0] + " " + c["site"].split("/")[-1]
 for c in d["processes"][0]["devices"][0]["idle"]["host_bound_causes"]]')" \
	'["BatchEncoding.to tokenization_utils_base.py:800)", "MyTrainer.compute_loss ft.py:12)", "Accelerator.clip_grad_norm_ accelerator.py:2300)", "AdamW.step adamw.py:200)", "Module.zero_grad module.py:2600)"]'
is "trainer: the launch-bound finding and the steps' first launch at BatchEncoding.to" \
	"$(json_query "$TMPD/tr.rep.json" '([[f["kind"], f["site"].split(" (")[0]] for f in d["processes"][0]["findings"]] +
 [d["processes"][0]["iterations"]["anchor_site"].split("/")[-1]])')" \
	'[["launch_bound", "BatchEncoding.to"], "tokenization_utils_base.py:800"]'

# the same loop with thread states and CPU samples: the time the thread ran
# between calls goes to the lines its samples were taken on, the time it
# waited to the line it blocked in, a data loading line that makes no call
# included (gen_report_trace.py loop_samples)
gen_report loop_samples ls "report the loop with samples"
is "loop with samples: host time between calls by the samples' and waits' lines, the rest to the next call's" \
	"$(json_query "$TMPD/ls.rep.json" "[(x['phase'], x['site'], round(x['gpu_ms_median'], 6), round(x['host_ms_median'], 6), round(x['host_ms_min'], 6), round(x['host_ms_max'], 6), x['launches_median']) for x in $IT['phases']]")" \
	'[["DataLoader.__next__", "train (/home/u/t.py:10)", 0.0, 0.13, 0.13, 0.53, 0], ["load_batch", "train (/home/u/t.py:11)", 0.02, 0.01, 0.01, 0.01, 1], ["Model.forward", "train (/home/u/t.py:12)", 0.16, 0.25, 0.25, 0.25, 4], ["Model.backward", "train (/home/u/t.py:13)", 0.16, 0.28, 0.28, 0.28, 2], ["SGD.step", "train (/home/u/t.py:14)", 0.03, 0.07, 0.07, 0.07, 1], ["Tensor.item", "train (/home/u/t.py:15)", 0.005, 0.19, 0.19, 0.19, 0], ["Detector.postprocess", "train (/home/u/t.py:16)", 0.1, 0.02, 0.02, 0.02, 1], ["outside any phase", null, 0.0, 0.05, 0.05, 0.05, 0]]'
is "loop with samples: the steps are the same" \
	"$(json_query "$TMPD/ls.rep.json" "(lambda i: (i['steps'], i['kernels_per_step'], round(i['step_ms']['median'], 6), round(i['step_ms']['max'], 6)))($IT)")" \
	'[9, 9, 1.0, 1.4]'

# the same loop, its forward and backward launched by a worker with attributed stacks
gen_report workers w "report the loop with a worker"
anatomy="(lambda i: [i['thread'], i['source'], i['loop_function'], i['steps'], i['kernels_per_step'], i['anchor_kernel'], round(i['step_ms']['median'], 6), [(x['phase'], x['site'], round(x['gpu_ms_median'], 6), round(x['host_ms_median'], 6), round(x['host_ms_min'], 6), round(x['host_ms_max'], 6), x['launches_median']) for x in i['phases']]])($IT)"
is "workers: the Python thread's steps and anatomy, as if it had launched them" \
	"$(json_query "$TMPD/w.rep.json" "$anatomy")" "$(json_query "$TMPD/l.rep.json" "$anatomy" | sed 's/^\[300,/[302,/')"
causes="[(c['cause'], c['site'], round(c['ms'], 6), c.get('attributed', False)) for c in d['processes'][0]['devices'][0]['idle']['host_bound_causes']]"
is "workers: the same host-bound causes, the worker's launch sites attributed" \
	"$(json_query "$TMPD/w.rep.json" "$causes")" \
	"$(json_query "$TMPD/l.rep.json" "[(c, s, ms, s.startswith(('Model.backward', 'Layer.forward'))) for (c, s, ms, a) in $causes]")"
"$GPUBPF" report "$TMPD/w.json" >"$TMPD/w.txt"
like "workers: (attributed) after those sites in the text" "$(grep 'other  *Model.backward' "$TMPD/w.txt")" \
	'^ +1.000 ms \( 25%\)  other      Model.backward \(/home/u/model.py:30\) \(attributed\)$'

# a valid trace with no GPU activity
"$PY" - "$TMPD/k.json" "$TMPD/host.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") in (None, "cuda_api")]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
check "host-only trace: exit 0" "$GPUBPF" report "$TMPD/host.json"
like "host-only trace: says there is no GPU activity" "$("$GPUBPF" report "$TMPD/host.json")" "no GPU activity in this trace"

# bad inputs: one line naming the file, exit 1, nothing written
printf '{"traceEvents":[{"ph":"X","name":"x","pid":1,"tid":1,"ts":1,"dur":1}]}\n' >"$TMPD/foreign.json"
head -c 3000 "$TMPD/k.json" >"$TMPD/trunc.json"
: >"$TMPD/empty.json"
printf 'not json at all\n' >"$TMPD/text.json"
# a call with no time (it was left out, and the report made without it)
"$PY" - "$TMPD/k.json" "$TMPD/nots.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
next(e for e in d["traceEvents"] if e.get("cat") == "cuda_api").pop("ts")
json.dump(d, open(sys.argv[2], "w"))
PYEOF
for f in foreign trunc empty text missing nots; do
	rc=0
	"$GPUBPF" report -o "$TMPD/out-$f.txt" --memory-svg "$TMPD/out-$f.svg" "$TMPD/$f.json" \
		>"$TMPD/$f.out" 2>"$TMPD/$f.err" || rc=$?
	is "$f: exit 1" "$rc" 1
	like "$f: one line naming the file" "$(cat "$TMPD/$f.err")" "^gpubpf: $TMPD/$f.json: [^
]+$"
	ok "$f: nothing written" test ! -e "$TMPD/out-$f.txt" -a ! -e "$TMPD/out-$f.svg" -a ! -s "$TMPD/$f.out"
done
check_fails "unknown format" "$GPUBPF" report --format xml "$TMPD/k.json"
check_fails "no trace" "$GPUBPF" report

# standard output that cannot be written (a full disk): said, exit 1, and
# the --memory-svg written beside it removed (it failed silently)
if [[ -w /dev/full ]]; then
	rc=0
	"$GPUBPF" report --memory-svg "$TMPD/full.svg" "$TMPD/k.json" >/dev/full 2>"$TMPD/full.err" || rc=$?
	is "standard output full: exit 1, says so" "$rc:$(cat "$TMPD/full.err")" \
		"1:gpubpf: cannot write the report to standard output: No space left on device"
	ok "... and the SVG is not left" test ! -e "$TMPD/full.svg"
else
	skip "no writable /dev/full here" 2
fi

# the trace itself as an output: refused, the trace kept
cp "$TMPD/k.json" "$TMPD/keep.json"
for opt in -o --memory-svg; do
	rc=0
	"$GPUBPF" report "$opt" "$TMPD/keep.json" "$TMPD/keep.json" >/dev/null 2>"$TMPD/keep.err" || rc=$?
	is "$opt the trace read: exit 1" "$rc" 1
	is "$opt the trace read: says so" "$(cat "$TMPD/keep.err")" \
		"gpubpf: $opt '$TMPD/keep.json' is the trace being read: write the report elsewhere"
	check "$opt the trace read: the trace kept" cmp "$TMPD/k.json" "$TMPD/keep.json"
done

# outputs that are not plain files: a device or FIFO is written into (it
# was replaced with a file: -o /dev/null as root destroyed /dev/null), a
# link to a file is followed (the link kept)
"$GPUBPF" report "$TMPD/k.json" >"$TMPD/want.txt"
mkdir "$TMPD/dev"
mknod -m 666 "$TMPD/dev/null" c 1 3
mkfifo "$TMPD/dev/fifo"
ln -s report.txt "$TMPD/dev/link"
check "-o a null device" "$GPUBPF" report -o "$TMPD/dev/null" "$TMPD/k.json"
ok "it is still that device" test -c "$TMPD/dev/null"
timeout 20 cat "$TMPD/dev/fifo" >"$TMPD/fifo.txt" &
reader=$!
check "-o a FIFO" timeout 20 "$GPUBPF" report -o "$TMPD/dev/fifo" "$TMPD/k.json"
wait "$reader"
ok "it is still a FIFO" test -p "$TMPD/dev/fifo"
check "the report came through it" cmp "$TMPD/want.txt" "$TMPD/fifo.txt"
check "-o a link" "$GPUBPF" report -o "$TMPD/dev/link" "$TMPD/k.json"
ok "the link kept" test -L "$TMPD/dev/link"
check "the report in the file it names" cmp "$TMPD/want.txt" "$TMPD/dev/report.txt"
is "-o /dev/stdout on a pipe" "$("$GPUBPF" report -o /dev/stdout "$TMPD/k.json" | md5sum)" \
	"$(md5sum <"$TMPD/want.txt")"
is "nothing else left there" "$(ls -A "$TMPD/dev" | tr '\n' ' ')" "fifo link null report.txt "
done_testing
