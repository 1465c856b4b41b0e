#!/usr/bin/env bash
# test-timeout: 400
# The trace readers, report, merge, convert, record in parts, record
# --autograd and late attach through CPython's remote execution under
# AddressSanitizer and UndefinedBehaviorSanitizer (issue
# #10, item 8): their tests run again against build/asan/gpubpf (`make
# asan`, part of `make test`); each must pass, and no sanitizer may report
# anything (leaks included).
# Before the fix, report's qsort(NULL, 0, ...) on a trace with GPU work and
# no sync hotspot failed t0500 here.
. "$(dirname "$0")/lib.sh"
test_description "report, merge, convert, parts and remote-execution tests under ASan+UBSan"
ASAN_BIN="$GPUBPF_ROOT/build/asan/gpubpf"
[[ -x "$ASAN_BIN" ]] || skip_all "needs $ASAN_BIN (run make asan)"

# not t0510 (its figures have timing tolerances that a sanitized recorder
# misses on a loaded machine) nor t0620 (events of 256 MiB)
tests=(t0500-report-synthetic t0505-report-cupti-memory t0600-merge
	t0630-merge-valid-json t0166-convert t0167-record-parts t0530-autograd-nodes
	t0412-late-attach-remote-exec)
plan $((2 * ${#tests[@]}))
mkdir -p "$TMPD/san"
for t in "${tests[@]}"; do
	log="$TMPD/$t.log"
	rm -f "$TMPD"/san/*
	rc=0
	GPUBPF_TEST_BIN="$ASAN_BIN" \
		ASAN_OPTIONS="log_path=$TMPD/san/asan:detect_leaks=1:abort_on_error=0" \
		UBSAN_OPTIONS="log_path=$TMPD/san/ubsan:print_stacktrace=1:halt_on_error=1" \
		bash "$GPUBPF_ROOT/tests/$t.sh" >"$log" 2>&1 </dev/null || rc=$?
	nok=$(grep -c '^ok' "$log")
	nfail=$(grep -c '^not ok' "$log")
	if ((rc == 0 && nfail == 0)) && grep -q '^1\.\.' "$log"; then
		pass "$t under the sanitizers: $nok ok, $(grep -c '# SKIP' "$log") skipped"
	else
		fail "$t under the sanitizers (exit status $rc, $nfail failed)"
		grep -A3 '^not ok' "$log" | head -n 30 | diag
	fi
	reports=("$TMPD"/san/*)
	if [[ ! -e "${reports[0]}" ]]; then
		pass "$t: no sanitizer reports"
	else
		fail "$t: no sanitizer reports (${#reports[@]} found)"
		for r in "${reports[@]}"; do
			head -n 12 "$r" | diag
		done
	fi
done
