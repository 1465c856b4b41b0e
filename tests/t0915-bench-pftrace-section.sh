#!/usr/bin/env bash
# test-timeout: 120
# bench section 8 (bench/pftrace_bench.sh) with small knobs: the synthetic
# capture's row holds its numbers (.pftrace smaller than JSON), and the
# block replaces the old one in BENCHMARKS.md (here a copy), nothing else.
. "$(dirname "$0")/lib.sh"
test_description "bench section 8 (.pftrace against JSON) writes its table"
require_file "$GPUBPF_ROOT/build/bench/pftrace_bench"
plan 4

md="$TMPD/BENCHMARKS.md"
printf '# copy\n\n<!-- pftrace-bench:begin -->\nold\n<!-- pftrace-bench:end -->\n\ntail\n' >"$md"
rc=0
SECS=1 RATE=5000 REPS=1 BENCH_MD="$md" bash "$GPUBPF_ROOT/bench/pftrace_bench.sh" \
	>"$TMPD/out" 2>&1 || rc=$?
is "bash bench/pftrace_bench.sh exits 0" "$rc" 0 || tail -n 20 "$TMPD/out" | diag
row=$(grep '^| synthetic (1 s, 5000 calls/s, 30 frames) |' "$md" || true)
like "the synthetic capture's row" "$row" \
	'^\| synthetic [^|]*\| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+x \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \|$'
ok ".pftrace smaller than JSON" awk -F'|' -v r="$row" 'BEGIN { split(r, f, "|"); exit !(f[6] + 0 < f[4] + 0) }'
is "outside the block the file is as it was" \
	"$(sed '/^<!-- pftrace-bench:begin/,/^<!-- pftrace-bench:end/d' "$md")" "$(printf '# copy\n\n\ntail')"
done_testing
