#!/usr/bin/env bash
# test-timeout: 180
# A short libFuzzer run over the trace readers (issue #10, item 8):
# build/fuzz/fuzz_reader (`make asan`, part of `make test`) feeds arbitrary
# bytes to trace_reader, report and merge under ASan+UBSan for
# GPUBPF_FUZZ_SECONDS (default 20), seeded with tests/fuzz/corpus and traces
# the generators write; a crash, a sanitizer report, a leak or a broken
# reader promise fails the test, and the input is kept in
# build/fuzz/crashes/ for `build/fuzz/fuzz_reader FILE` to replay.  One
# input may take up to 60 s (a loaded machine stalls; a hang still fails).
. "$(dirname "$0")/lib.sh"
test_description "fuzzing the trace readers (libFuzzer, ASan+UBSan)"
FUZZ="$GPUBPF_ROOT/build/fuzz/fuzz_reader"
[[ -x "$FUZZ" ]] || skip_all "needs $FUZZ (run make asan)"
require_cmd "$PY"
plan 3
secs=${GPUBPF_FUZZ_SECONDS:-20}

mkdir -p "$TMPD/seeds" "$TMPD/new" "$TMPD/art"
cp "$GPUBPF_ROOT"/tests/fuzz/corpus/* "$TMPD/seeds/"
"$PY" "$GPUBPF_ROOT/tests/cluster/gentrace.py" -o "$TMPD/seeds/gen-a.json" --host n1 \
	--pids 100,200 --events 30 --nccl 4 --shuffle 5
"$PY" "$GPUBPF_ROOT/tests/cluster/gentrace.py" -o "$TMPD/seeds/gen-b.json.gz" --host n2 \
	--pids 100 --events 12 --nccl 2 --pretty
"$PY" "$GPUBPF_ROOT/tests/py/gen_report_trace.py" known "$TMPD/seeds/gen-known.json"
is "seed corpus" "$(ls "$TMPD/seeds" | wc -l)" "$(($(ls "$GPUBPF_ROOT/tests/fuzz/corpus" | wc -l) + 3))"

rc=0
(cd "$TMPD" && GPUBPF_FUZZ_TMPDIR="$TMPD" \
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	"$FUZZ" -max_total_time="$secs" -timeout=60 -rss_limit_mb=2048 \
	-dict="$GPUBPF_ROOT/tests/fuzz/trace.dict" -artifact_prefix="$TMPD/art/" \
	-print_final_stats=1 new seeds) >"$TMPD/fuzz.log" 2>&1 || rc=$?
diag "$(grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$TMPD/fuzz.log" | tr '\n' ' ')"
if ((rc == 0)); then
	pass "${secs} s of fuzzing: no crash, no sanitizer report"
else
	fail "${secs} s of fuzzing: no crash, no sanitizer report (exit status $rc)"
	grep -E -A25 '^==[0-9]+==ERROR|runtime error|deadly signal|Test unit written' \
		"$TMPD/fuzz.log" | head -n 60 | diag
fi
arts=("$TMPD"/art/*)
if [[ -e "${arts[0]}" ]]; then
	mkdir -p "$GPUBPF_ROOT/build/fuzz/crashes"
	cp "${arts[@]}" "$GPUBPF_ROOT/build/fuzz/crashes/"
	fail "no failing input (kept in build/fuzz/crashes/)"
else
	pass "no failing input"
fi
