#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# gpubpf report throughput and memory: a synthetic trace of N events (default
# 5,000,000; a steady training loop with Python stacks on every call, from
# tests/py/gen_report_trace.py), reported once; prints events/s and peak RSS.
#
#	bench/report_bench.sh [N] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000000}
dir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/gpubpf-report-bench.XXXXXX")}
trace="$dir/big.json"
[[ -x build/gpubpf ]] || { echo "report_bench: build first (make)" >&2; exit 1; }
[[ -e "$trace" ]] || python3 tests/py/gen_report_trace.py big "$trace" "$n"
/usr/bin/time -f "%e %M" -o "$dir/time" build/gpubpf report --format json -o "$dir/report.json" "$trace"
read -r secs rss_kb <"$dir/time"
events=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$dir/report.json")
printf 'report: %d events (%d MB trace) in %.2f s: %.0f events/s, peak RSS %d MB\n' \
	"$events" $(( $(stat -c %s "$trace") / 1000000 )) "$secs" \
	"$(python3 -c "print($events / max($secs, 0.01))")" $((rss_kb / 1024))
