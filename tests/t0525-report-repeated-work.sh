#!/usr/bin/env bash
# Repeated work from a recording: a loop that recomputes one kernel on the
# same inputs every step (repeat_workload.py on the simulated driver) gets
# one repeated_work finding, at that line, with the repeats' exact GPU
# time; its look-alikes (another grid, arguments not known, the same
# arguments once a step) get none.  Each launch's argument hash comes from
# the injection library: through the simulated driver's hooks, and through
# the shipped library's CUPTI backend (libcupti_sim.so), the same.
. "$(dirname "$0")/lib.sh"
test_description "report: repeated work found from the launches' arguments"
require_bpf
require_sim
require_file "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$SIMLIB/libcupti_sim.so"
export LD_LIBRARY_PATH="$SIMLIB"
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB
wl="$GPUBPF_ROOT/tests/py/repeat_workload.py"
repeat_line=$(grep -n '# REPEAT_LINE$' "$wl" | cut -d: -f1)
cp "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$TMPD/"

check "record (simulated driver's hooks)" "$GPUBPF" record --quiet -o "$TMPD/s.json" -- \
	"$PY" "$wl"
GPUBPF_CUPTI_LIB="$SIMLIB/libcupti_sim.so" check "record (CUPTI backend)" "$GPUBPF" record \
	--quiet --cupti-lib "$TMPD/libgpubpf_cupti.so" -o "$TMPD/c.json" -- \
	"$PY" "$wl"

# per kernel name and grid, the argument hashes: how many distinct, how many launches
hashes='sorted({(e["name"], e["args"]["grid"][0]): [len({x["args"].get("args_hash") for x in ev if x.get("cat") == "kernel" and x["name"] == e["name"] and x["args"]["grid"] == e["args"]["grid"]}), len([x for x in ev if x.get("cat") == "kernel" and x["name"] == e["name"] and x["args"]["grid"] == e["args"]["grid"]])] for e in ev if e.get("cat") == "kernel"}.items())'
want='[[["linear(u32,ptr,ptr)", 1], [3, 18]], [["norm", 1], [1, 12]], [["sgd(u32,ptr)", 1], [2, 12]], [["softmax(u32,ptr,ptr)", 32], [1, 6]], [["softmax(u32,ptr,ptr)", 64], [1, 12]]]'
is "hooks: one argument hash per distinct arguments (none for norm)" "$(json_query "$TMPD/s.json" "$hashes")" "$want"
is "hooks: norm's arguments are not known" "$(json_query "$TMPD/s.json" \
	'sorted({str(e["args"].get("args_hash")) for e in ev if e.get("cat") == "kernel" and e["name"] == "norm"})')" '["None"]'
is "CUPTI backend: the same hashes" "$(json_query "$TMPD/c.json" \
	'sorted({(e["name"], e["args"].get("args_hash")) for e in ev if e.get("cat") == "kernel"})')" \
	"$(json_query "$TMPD/s.json" 'sorted({(e["name"], e["args"].get("args_hash")) for e in ev if e.get("cat") == "kernel"})')"

for b in s c; do
	check "$b: report --format json" "$GPUBPF" report --format json -o "$TMPD/$b.rep.json" "$TMPD/$b.json"
	# repeated work only: a machine slow to trap may also show a few tens of
	# us of host-bound idle time, its launches' own cost under the probes
	is "$b: one repeated_work finding, at the metrics line: 5 repeats of 500 us (6 iterations, 5 steps)" \
		"$(json_query "$TMPD/$b.rep.json" "[(f['kind'], round(f['cost_ms'], 3), f['site'], f['count']) for f in d['processes'][0]['findings'] if f['kind'] == 'repeated_work']")" \
		"[[\"repeated_work\", 2.5, \"metrics ($wl:$repeat_line)\", 5]]"
done
"$GPUBPF" report "$TMPD/s.json" >"$TMPD/s.txt"
like "text: the finding and its evidence" "$(cat "$TMPD/s.txt")" \
	"1\\. repeated_work +2\\.500 ms  metrics \\(.*repeat_workload.py:$repeat_line\\)
 +softmax\\(u32,ptr,ptr\\) ran again on the same grid and arguments 5 times in 5 of 5 steps"
done_testing
