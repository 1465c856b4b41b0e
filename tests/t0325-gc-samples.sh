#!/usr/bin/env bash
# Garbage collection told apart: a workload on the simulated driver whose
# GPU idles while gc.collect() frees many reference cycles
# (tests/py/gc_workload.py) has its CPU samples in the collector marked
# "gc" (those in collect_garbage() only, none in make_cycles()), and
# the report puts most of its host-bound time on a CPU on "gc" at the line
# calling gc.collect(); on every CPython 3.7 to 3.15 found (each reads the
# collector's flag at its own offset: 3.13+ from their _Py_DebugOffsets;
# 3.7 and 3.8 keep it in their runtime, not their interpreter; 3.6's is a
# static variable, not looked for).
. "$(dirname "$0")/lib.sh"
test_description "garbage collection in samples and host-bound causes"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
W="$GPUBPF_ROOT/tests/py/gc_workload.py"
gc_line=$(grep -n '# GC_LINE$' "$W" | cut -d: -f1)

found=0
for v in 3.7 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15; do
	py=$(cpythons $v | head -1)
	[[ -n "$py" ]] || continue
	found=1
	check "$v: record" "$GPUBPF" record --quiet -o "$TMPD/$v.json" -- "$py" "$W" || continue
	# the samples in the workload's own functions, by whether they are in the
	# collector (imports and the interpreter's exit collect garbage too)
	json_query "$TMPD/$v.json" '
[c := collections.Counter(), [c.update([("gc" if e["args"].get("gc") else "cpu") + ":" + e["name"]])
                              for e in ev if e.get("cat") == "sample" and
                              "gc_workload.py:" in e["args"].get("stack", [""])[0]], dict(c)][-1]' >"$TMPD/$v.samples"
	cmp_ok "$v: samples in the collector, in collect_garbage()" \
		"$(json_query "$TMPD/$v.samples" 'd.get("gc:collect_garbage", 0)')" -ge 20
	cmp_ok "$v: samples making the cycles, not in the collector" \
		"$(json_query "$TMPD/$v.samples" 'd.get("cpu:make_cycles", 0)')" -ge 20
	is "$v: none of the workload's other samples in the collector" \
		"$(json_query "$TMPD/$v.samples" 'sorted(k for k in d if k.startswith("gc:") and k != "gc:collect_garbage")')" "[]"
	check "$v: report" "$GPUBPF" report --format json -o "$TMPD/$v.rep.json" "$TMPD/$v.json" || continue
	# of the host-bound time the thread spent on a CPU (gc or running: the
	# rest, waiting for a CPU on these shared machines, is runnable), gc
	json_query "$TMPD/$v.rep.json" '
[i := d["processes"][0]["devices"][0]["idle"],
 g := [c for c in i["host_bound_causes"] if c["cause"] == "gc"],
 cpu := [c for c in i["host_bound_causes"] if c["cause"] in ("gc", "running")],
 {"sites": sorted({c["site"].split("/")[-1] for c in g}),
  "share": sum(c["ms"] for c in g) / max(sum(c["ms"] for c in cpu), 1e-9),
  "first": cpu[0]["cause"] if cpu else None}][-1]' >"$TMPD/$v.gc"
	# what the checks below read, for a failure on a machine far away
	diag "$v: host-bound $(json_query "$TMPD/$v.rep.json" '
[i := d["processes"][0]["devices"][0]["idle"],
 "%.1f ms: " % i["host_bound_ms"] + ", ".join("%s %.1f" % (c["cause"], c["ms"])
                                              for c in i["host_bound_causes"][:6])][-1]')"
	is "$v: gc time is at the line calling gc.collect()" \
		"$(json_query "$TMPD/$v.gc" 'd["sites"]')" "[\"gc_workload.py:$gc_line)\"]"
	is "$v: of the time on a CPU, gc is the costliest" "$(json_query "$TMPD/$v.gc" 'd["first"]')" gc
	cmp_ok "$v: most of the host-bound time on a CPU is gc (percent)" \
		"$(json_query "$TMPD/$v.gc" 'int(100 * d["share"])')" -ge 50
done
((found)) || skip_all "no CPython 3.7 to 3.15 found"
done_testing
