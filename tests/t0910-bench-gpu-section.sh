#!/usr/bin/env bash
# test-timeout: 240
# bench/run.sh section 4 (`bash bench/run.sh gpu`) with small knobs: what
# it parses from `gpubpf record` is its summary line and the workload's own
# line, never the report record prints when it is done, and the block it
# writes into BENCHMARKS.md (here a copy) is clean: one table row per line,
# zero loss found, no report text.
. "$(dirname "$0")/lib.sh"
test_description "bench section 4 (GPU timing) parses record's output, not its report"
require_bpf
require_sim
require_gpubpf
require_file "$GPUBPF_ROOT/build/bench/gpuwork" "$SIMINJ"
plan 7

md="$TMPD/BENCHMARKS.md"
printf '# copy\n\n<!-- gpu-bench:begin -->\nold\n<!-- gpu-bench:end -->\n\ntail\n' >"$md"
rc=0
GPU_REPS=1 GPU_N=300 GPU_UNTRACED_N=1000 GRAPH_K=20 GRAPH_R_LIST=5 GRAPH_REPS=1 \
	BENCH_MD="$md" bash "$GPUBPF_ROOT/bench/run.sh" gpu >"$TMPD/out" 2>&1 || rc=$?
is "bash bench/run.sh gpu exits 0" "$rc" 0 || tail -n 20 "$TMPD/out" | diag
report_text='gpubpf report:|top driver calls|GPU activities|iterations:|sync hotspots'
ok "no report text in the run's output" eval '! grep -Eq "$report_text" "$TMPD/out"' ||
	grep -E "$report_text" "$TMPD/out" | head -n 5 | diag
# each recorded run: one line with the workload's numbers and the summary's
bad=$(grep -E '^  (rep [0-9]+ (host|gpu)|K=)' "$TMPD/out" |
	grep -Ev 'mode=[a-z]+ .*kernels=[0-9]+ .* events=[0-9]+ dropped=[0-9]+ dropped_total=[0-9]+ gpu_dropped=[0-9]+ kernel_events=[0-9]+$' || true)
n=$(grep -cE '^  (rep [0-9]+ (host|gpu)|K=)' "$TMPD/out")
ok "every recorded run parsed into one line: workload line and summary ($n runs)" test -z "$bad" -a "$n" = 5 ||
	diag "$bad"
ok "no GPU record reported lost or miscounted" eval '! grep -q "WARNING" "$TMPD/out"' ||
	grep WARNING "$TMPD/out" | diag
blk=$(sed -n '/^<!-- gpu-bench:begin/,/^<!-- gpu-bench:end/p' "$md")
ok "the written block has no report text" eval '! grep -Eq "$report_text" <<<"$blk"'
like "the block finds zero loss at 100 records" "$blk" 'Zero loss at the default 16 MiB ring buffer: largest run 100 records at [0-9]+ records/s\.'
is "outside the block the file is as it was" "$(sed '/^<!-- gpu-bench:begin/,/^<!-- gpu-bench:end/d' "$md")" "$(printf '# copy\n\n\ntail')"
