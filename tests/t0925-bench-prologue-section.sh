#!/usr/bin/env bash
# test-timeout: 180
# bench section 7 (bench/prologue_bench.sh) on the push stub with small
# knobs: gpubpf recorded every call (the script says so otherwise), the
# row has a figure in each of its columns, the program that makes only
# the launch's helper calls (empty_uprobe -c) and the empty probe were both
# measured, and the block replaces the old one in BENCHMARKS.md (here a
# copy), nothing else.  The two are not compared: where a trap costs 7 us,
# one repetition cannot order them ~250 ns apart (make bench's medians do).
. "$(dirname "$0")/lib.sh"
test_description "bench section 7 (cost per call by entry shape) writes its table"
require_root
require_file "$GPUBPF_ROOT/build/bench/empty_uprobe"
require_file "$GPUBPF_ROOT/build/bench/sidecost"
plan 6

md="$TMPD/BENCHMARKS.md"
printf '# copy\n\n<!-- prologue-bench:begin -->\nold\n<!-- prologue-bench:end -->\n\ntail\n' >"$md"
rc=0
SHAPES=push REPS=1 ROUNDS=30 STATS_N=2000 LAG_N=1000 RING_SIZES=4M BENCH_MD="$md" \
	bash "$GPUBPF_ROOT/bench/prologue_bench.sh" >"$TMPD/out" 2>&1 || rc=$?
is "bash bench/prologue_bench.sh exits 0" "$rc" 0 || tail -n 20 "$TMPD/out" | diag
row=$(grep '^| push |' "$md")
is "one row, for the push stub" "$(grep -c '^| push |' "$md")" 1
is "its ten columns" "$(awk -F'|' '{ print NF - 2 }' <<<"$row")" 10
is "gpubpf recorded every call" "$(grep -c 'lost or miscounted' "$md")" 0
# fields: 5 the empty uprobe, 10 the launch's calls alone (ns per call)
ok "the launch's calls alone and the empty uprobe measured" \
	awk -F'|' '{ exit !($10 + 0 > 0 && $5 + 0 > 0) }' <<<"$row"
is "outside the block the file is as it was" \
	"$(sed '/^<!-- prologue-bench:begin/,/^<!-- prologue-bench:end/d' "$md")" "$(printf '# copy\n\n\ntail')"
done_testing
