#!/usr/bin/env bash
# Recordings of any length: past --memory, record writes the older part
# of its model out as a sorted run beside each output and merges the runs
# at the end.
#  - the same simulated recording finished whole and in parts gives the
#    same events, metadata and arrows, in JSON and in .pftrace (read back
#    by gpubpf and by Perfetto) (test_model_part, check_parts.py);
#  - a recording in parts still has every call of the workload with its
#    arguments, imports into Perfetto with one arrow per GPU slice, and
#    its report is that of 'gpubpf report' on the file;
#  - .pftrace and .json.gz outputs written in parts, the same slices in
#    both, a graph launch's arrows to each of its kernels; no files left
#    behind, a full disk, bad --memory.
. "$(dirname "$0")/lib.sh"
test_description "record --memory: a trace written in parts"
require_bpf
require_sim
require_file "$GPUBPF_ROOT/build/bench/gpuwork"
probed=$(probed_list)

mkdir -p "$TMPD/unit"
check "test_model_part: a recording finished whole and in parts" \
	"$GPUBPF_ROOT/build/tests/test_model_part" "$TMPD/unit"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_parts.py" "$TMPD/unit/whole.json" "$TMPD/unit/parts.json"
for f in whole parts; do
	check "the $f .pftrace read back" "$GPUBPF" convert "$TMPD/unit/$f.pftrace" "$TMPD/unit/$f-pf.json"
done
tap_from "$PY" "$GPUBPF_ROOT/tests/check_parts.py" "$TMPD/unit/whole-pf.json" "$TMPD/unit/parts-pf.json"
perfetto_ok "$TMPD/unit/parts.pftrace"
gil_flows_ok "$TMPD/unit/parts.json" "$TMPD/unit/parts.pftrace"

export LD_LIBRARY_PATH="$SIMLIB"
out=$TMPD/rec
mkdir -p "$out"
check "record --memory 1M exits 0 with the workload" \
	"$GPUBPF" record -v --memory 1M -o "$out/train.json" -- \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 200 --sync-every 4 --truth "$TMPD/truth.json"
parts=$(grep -c "gpubpf: part [0-9]* written out" "$TMPD/.check.out")
like "the recording was written in several parts ($parts)" "$parts" '^([3-9]|[1-9][0-9]+)$'
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --sim-syncs \
	"$out/train.json" "$TMPD/truth.json" "$probed"
is "no event lost" "$(json_query "$out/train.json" 'd["gpubpf"]["dropped_total"]')" 0
launches='[e for e in ev if e.get("cat") == "cuda_api" and e["name"].startswith("cuLaunch")]'
is "every launch's kernel ran and is linked to it" "$(json_query "$out/train.json" \
	"[len($launches), len([e for e in $launches if e.get('flow_out')])]")" \
	"$(json_query "$TMPD/truth.json" '[len([c for c in d if c["name"].startswith("cuLaunch")])] * 2')"
is "nothing left beside the trace" "$(ls -A "$out")" "train.json"
perfetto_ok "$out/train.json"
sed -n '/^gpubpf report: /,$p' "$TMPD/.check.out" >"$TMPD/record-report.txt"
"$GPUBPF" report "$out/train.json" >"$TMPD/report.txt" 2>&1
check "record's report is that of 'gpubpf report' on the file" \
	cmp "$TMPD/record-report.txt" "$TMPD/report.txt"

check "a .pftrace and a .json.gz, recorded in parts" \
	"$GPUBPF" record -q --memory 1M -o "$out/run.pftrace" -o "$out/run.json.gz" -- \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 200 --sync-every 4
is "no temporary JSON or run left" "$(ls -A "$out" | sort | tr '\n' ' ')" \
	"run.json.gz run.pftrace train.json "
perfetto_ok "$out/run.pftrace"
perfetto_ok "$out/run.json.gz"
if tp=$(trace_processor); then
	per_cat="select category, count(*) from slice where category != 'gpubpf' group by 1 order by 1"
	is "the same slices per category in the .pftrace and the .json.gz" \
		"$("$tp" query "$out/run.pftrace" <<<"$per_cat" 2>/dev/null)" \
		"$("$tp" query "$out/run.json.gz" <<<"$per_cat" 2>/dev/null)"
else
	skip "Perfetto's trace_processor_shell not found (set TRACE_PROCESSOR)" 1
fi
check "a .pftrace alone, recorded in parts" \
	"$GPUBPF" record -v --memory 1M -o "$out/alone.pftrace" -- \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 200 --sync-every 4
like "in several parts" "$(grep -c "gpubpf: part [0-9]* written out" "$TMPD/.check.out")" \
	'^([3-9]|[1-9][0-9]+)$'
is "only the .pftrace is left" "$(ls -A "$out" | sort | tr '\n' ' ')" \
	"alone.pftrace run.json.gz run.pftrace train.json "
sed -n '/^gpubpf report: /,$p' "$TMPD/.check.out" >"$TMPD/record-report.txt"
"$GPUBPF" report "$out/alone.pftrace" >"$TMPD/report.txt" 2>&1
check "record's report is that of 'gpubpf report' on the .pftrace" \
	cmp "$TMPD/record-report.txt" "$TMPD/report.txt"
# enough of them to outlast the cutoff's lag (250 ms) several times over:
# a part never takes calls younger than that, whose GPU work may be on its way
REPLAYS=8000
check "$REPLAYS graph launches of 5 kernels, in parts" \
	"$GPUBPF" record -v --memory 1M -o "$out/graph.pftrace" -- \
	"$GPUBPF_ROOT/build/bench/gpuwork" -l "$SIMLIB/libcuda.so.1" -m graph -k 5 -r $REPLAYS
like "in several parts" "$(grep -c "gpubpf: part [0-9]* written out" "$TMPD/.check.out")" \
	'^([3-9]|[1-9][0-9]+)$'
perfetto_ok "$out/graph.pftrace"    # each kernel with an arrow from its launch
if tp=$(trace_processor); then
	is "every kernel of the graph launches, each reached by one flow" \
		"$("$tp" query "$out/graph.pftrace" <<<"select count(*), count(distinct f.id) from slice s
			join flow f on f.slice_in = s.id where s.category = 'kernel'" 2>/dev/null | tail -1)" \
		"$((5 * REPLAYS)),$((5 * REPLAYS))"
else
	skip "Perfetto's trace_processor_shell not found (set TRACE_PROCESSOR)" 1
fi

# a disk that fills up: the recording stops, says why once, writes nothing
full=$TMPD/full
mkdir -p "$full"
if mount -t tmpfs -o size=2m tmpfs "$full" 2>/dev/null; then
	rc=0
	"$GPUBPF" record -q --memory 1M -o "$full/t.json" -- \
		"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 200 --sync-every 4 \
		>"$TMPD/full.out" 2>&1 || rc=$?
	is "a full disk: record fails" "$rc" 1
	is "a full disk: said once" "$(grep -c 'cannot write events out beside .*No space left on device; recording stops' "$TMPD/full.out")" 1
	is "a full disk: no trace, no run left" "$(ls -A "$full")" ""
	umount "$full"
else
	skip "cannot mount a tmpfs" 3
fi

out=$TMPD/empty
mkdir -p "$out"
for bad in 0 100K 1.5M lots; do
	expect_error "--memory $bad is refused" 1 "invalid memory size '$bad'" \
		"$GPUBPF" record --memory "$bad" -- true
done
done_testing
