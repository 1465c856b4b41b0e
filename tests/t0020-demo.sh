#!/usr/bin/env bash
# `make demo` (scripts/demo.sh): the newcomer's first trace.  It records the
# simulated training job, prints the report, and writes a trace that
# Perfetto's importer reads as the README says: GPU work on stream tracks
# with an arrow from each launch, calls inside their Python functions.
. "$(dirname "$0")/lib.sh"
test_description "make demo: records, reports, and writes a trace Perfetto reads"
require_bpf
require_sim

trace="$GPUBPF_ROOT/build/demo/gpubpf-demo.json"
rm -f "$trace"
check "scripts/demo.sh exits 0" bash -c "bash '$GPUBPF_ROOT/scripts/demo.sh' >'$TMPD/out' 2>&1"
diag <"$TMPD/out"
like "it says where the trace is" "$(cat "$TMPD/out")" "the timeline is $trace"
like "it prints the report" "$(cat "$TMPD/out")" "GPU 0: busy"
# named as it runs, not as it was before its exec (the scheduler sees it first)
is "the process is named python3" "$(json_query "$trace" \
	'[e["args"]["name"] for e in ev if e.get("name") == "process_name"]')" '["python3"]'
is "the trace has kernels on stream tracks" "$(json_query "$trace" \
	'len([e for e in ev if e.get("cat") == "kernel"]) > 100')" true
# 30 steps, an .item() every 5th: one step per pass of the loop, 29 between
# the first and the last, whatever runs only every few steps
check "report --format json" "$GPUBPF" report --format json -o "$TMPD/r.json" "$trace"
is "the report finds the demo's 30 steps (29 between them)" \
	"$(json_query "$TMPD/r.json" '[p["iterations"]["steps"] for p in d["processes"]]')" '[29]'
# the job calls the driver through its binding (sim/site-packages), as a
# script calls it through torch: the costliest sync is the loop's .item()
# line, 6 in the loop and one at the end, not a line of the binding
item_line=$(grep -n '# ITEM_LINE' "$GPUBPF_ROOT/sim/train.py" | cut -d: -f1)
is "the costliest sync hotspot is loss_item's copy, at its line" "$(json_query "$TMPD/r.json" \
	'[[h["function"], h["site"], h["call"], h["count"]] for h in d["processes"][0]["sync_hotspots"][:1]]')" \
	"[[\"loss_item\", \"$GPUBPF_ROOT/sim/train.py:$item_line\", \"cuMemcpyDtoH_v2\", 7]]"
like "the text names it too" "$(cat "$TMPD/out")" \
	"sync hotspots .*
 +7 +[0-9.]+ +[0-9.]+  loss_item \\($GPUBPF_ROOT/sim/train.py:$item_line\\)  \\[cuMemcpyDtoH_v2\\]"
perfetto_ok "$trace"
done_testing
