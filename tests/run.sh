#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Run gpubpf's tests: the C unit tests build/tests/test_* and then the shell
# tests tests/tNNNN-*.sh and the GPU machine checks tests/gpu/tNNNN-*.sh
# (which skip without an NVIDIA GPU), each under a timeout, each printing
# TAP.
#
#	tests/run.sh [PATTERN...]
#
# With patterns, only tests whose name contains one of them run.  Each
# test's output goes to build/test-logs/NAME.log.  A test file that exits
# non-zero, times out, or whose plan does not match the results it printed
# counts as one more failure.  A failing file's "not ok" lines are printed,
# each with up to 40 of the diagnostic lines after it, then its log's last
# 20 lines.  The last line is "N passed, M failed, K
# skipped"; the exit status is 0 iff nothing failed.
#
# Environment: GPUBPF_TEST_TIMEOUT (seconds per test, default 300); a
# shell test may raise its own with a "# test-timeout: N" line near its top.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
logdir="$root/build/test-logs"
mkdir -p "$logdir"
default_timeout=${GPUBPF_TEST_TIMEOUT:-300}

total_ok=0
total_fail=0
total_skip=0

selected() {
	local name=$1 p
	(($# > 1)) || return 0
	shift
	for p in "$@"; do
		[[ "$name" == *"$p"* ]] && return 0
	done
	return 1
}

# run_one NAME TIMEOUT CMD...
run_one() {
	local name=$1 to=$2 log="$logdir/$1.log" rc=0
	shift 2
	local nok=0 nfail=0 nskip=0 nrun=0 plan='' plan_skip='' why=() line
	local failing=() ndiag=-1

	timeout -k 10 "$to" "$@" >"$log" 2>&1 </dev/null || rc=$?

	while IFS= read -r line || [[ -n "$line" ]]; do
		line=${line%$'\r'}
		# a failure's diagnostics: the comment lines right after it
		if ((ndiag >= 0)) && [[ "$line" == '#'* ]]; then
			((ndiag++ < 40)) && failing+=("  $line")
			continue
		fi
		ndiag=-1
		if [[ "$line" =~ ^1\.\.([0-9]+)(.*)$ ]]; then
			plan=${BASH_REMATCH[1]}
			if [[ "${BASH_REMATCH[2]}" =~ \#[[:space:]]*[Ss][Kk][Ii][Pp][[:space:]]*(.*)$ ]]; then
				plan_skip=${BASH_REMATCH[1]:-skipped}
			fi
		elif [[ "$line" =~ ^not\ ok([[:space:]]|$) ]]; then
			nrun=$((nrun + 1))
			if [[ "$line" =~ \#[[:space:]]*[Tt][Oo][Dd][Oo] ]]; then
				nskip=$((nskip + 1))
			else
				nfail=$((nfail + 1))
				failing+=("$line")
				ndiag=0
			fi
		elif [[ "$line" =~ ^ok([[:space:]]|$) ]]; then
			nrun=$((nrun + 1))
			if [[ "$line" =~ \#[[:space:]]*[Ss][Kk][Ii][Pp] ]]; then
				nskip=$((nskip + 1))
			else
				nok=$((nok + 1))
			fi
		elif [[ "$line" =~ ^Bail\ out! ]]; then
			failing+=("$line")
			why+=("bailed out")
		fi
	done <"$log"

	if ((rc == 124 || rc == 137)); then
		why+=("timed out after ${to}s")
	elif ((rc != 0)); then
		why+=("exit status $rc")
	fi
	if [[ -z "$plan" ]]; then
		why+=("no plan")
	elif ((plan != nrun)); then
		why+=("planned $plan, ran $nrun")
	fi

	# a file skipped as a whole counts as one skip
	if [[ -n "$plan_skip" && "$plan" == 0 && ${#why[@]} -eq 0 ]]; then
		total_skip=$((total_skip + 1))
		echo "SKIP $name ($plan_skip)"
		return
	fi

	total_ok=$((total_ok + nok))
	total_skip=$((total_skip + nskip))
	total_fail=$((total_fail + nfail))
	((${#why[@]})) && total_fail=$((total_fail + 1))

	if ((nfail == 0 && ${#why[@]} == 0)); then
		echo "PASS $name ($nok ok, $nskip skipped)"
		return
	fi
	local reasons="" w
	for w in "${why[@]}"; do
		reasons+="; $w"
	done
	echo "FAIL $name ($nok ok, $nfail failed, $nskip skipped$reasons)"
	for line in "${failing[@]}"; do
		echo "    $line"
	done
	echo "    --- last 20 lines of ${log#"$root"/}"
	tail -n 20 "$log" | sed 's/^/    | /'
}

# a named test with nothing to run is a failure (typo, or not built)
report_missing() {
	total_fail=$((total_fail + 1))
	echo "FAIL $1 ($2)"
}

pats=("$@")
declare -A matched=()

note_match() {
	local p
	for p in "${pats[@]}"; do
		[[ "$1" == *"$p"* ]] && matched[$p]=1
	done
}

# C unit tests; a source without its binary means the build is broken.
shopt -s nullglob
for src in tests/unit/test_*.c; do
	name=$(basename "$src" .c)
	selected "$name" "${pats[@]}" || continue
	note_match "$name"
	[[ -x "build/tests/$name" ]] || report_missing "$name" "build/tests/$name not built"
done
for bin in build/tests/test_*; do
	[[ -f "$bin" && -x "$bin" ]] || continue
	name=$(basename "$bin")
	selected "$name" "${pats[@]}" || continue
	note_match "$name"
	run_one "$name" "$default_timeout" "$bin"
done

# shell tests, in name order, then the GPU machine checks
for t in tests/t[0-9][0-9][0-9][0-9]-*.sh tests/gpu/t[0-9][0-9][0-9][0-9]-*.sh; do
	name=$(basename "$t" .sh)
	selected "$name" "${pats[@]}" || continue
	note_match "$name"
	to=$default_timeout
	line=$(head -n 20 "$t" | grep -m1 -E '^# test-timeout: [0-9]+' || true)
	[[ -n "$line" && -z "${GPUBPF_TEST_TIMEOUT:-}" ]] && to=${line##* }
	run_one "$name" "$to" bash "$t"
done

for p in "${pats[@]}"; do
	[[ -n "${matched[$p]:-}" ]] || report_missing "$p" "pattern matched no test"
done

echo "$total_ok passed, $total_fail failed, $total_skip skipped"
((total_fail == 0))
