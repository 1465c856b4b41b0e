#!/usr/bin/env bash
# test-timeout: 120
# bench section 15 (bench/helper_bench.sh) with small knobs: every kind of
# call has its row with a figure, each program ran exactly as many times
# as the stub was called (helper_cost exits 1 otherwise), a read of 4 KiB
# costs more than one of 8 bytes, and the block replaces the old one in
# BENCHMARKS.md (here a copy), nothing else.
. "$(dirname "$0")/lib.sh"
test_description "bench section 15 (what one BPF helper call costs) writes its table"
require_root
require_file "$GPUBPF_ROOT/build/bench/helper_cost"
plan 8

md="$TMPD/BENCHMARKS.md"
printf '# copy\n\n<!-- helper-bench:begin -->\nold\n<!-- helper-bench:end -->\n\ntail\n' >"$md"
rc=0
REPS=1 CALLS=20000 BENCH_MD="$md" bash "$GPUBPF_ROOT/bench/helper_bench.sh" \
	>"$TMPD/out" 2>&1 || rc=$?
is "bash bench/helper_bench.sh exits 0" "$rc" 0 || tail -n 20 "$TMPD/out" | diag
is "one row per kind of call, each with a figure" \
	"$(grep -cE '^\| [^|]+ \| -?[0-9]+\.[0-9] \|$' "$md")" 15
fig() { grep -F "| $1" "$md" | awk -F'|' '{ print $3 + 0 }'; }
ok "a 4 KiB read costs more than an 8-byte one" \
	awk -v a="$(fig "bpf_probe_read_user(), 4 KiB")" -v b="$(fig "bpf_probe_read_user(), 8 bytes into a map")" \
	'BEGIN { exit !(a > b) }'
# measured, not compared: one repetition of 20000 calls cannot order two
# figures 100 ns apart on these VMs (make bench takes the medians)
ok "the entry program's calls once each, and the clock once, measured" \
	awk -v a="$(fig "the calls of gpubpf")" -v b="$(fig "bpf_ktime_get_ns(), the one call")" \
	'BEGIN { exit !(a > 0 && b > 0) }'
ok "an empty program's run time is positive" \
	awk -v a="$(fig "an empty program")" 'BEGIN { exit !(a > 0) }'
like "the entry program's calls measured" "$(cat "$md")" 'for a launch without a stack take \*\*[0-9]+ ns\*\*'
like "the walk's calls priced" "$(cat "$md")" 'at depth 30 on CPython 3.11/3.12 .* \*\*[0-9]+ ns\*\*'
is "outside the block the file is as it was" \
	"$(sed '/^<!-- helper-bench:begin/,/^<!-- helper-bench:end/d' "$md")" "$(printf '# copy\n\n\ntail')"
done_testing
