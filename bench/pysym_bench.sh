#!/usr/bin/env bash
# Python frame symbolisation throughput and memory (issue #3 benchmarks):
# bench/pysym_bench on each CPython 3.8-3.13 that pyenv has (else python3),
# K distinct functions, medians of 3 cold-cache repetitions.
#
#	make bench-bins && bash bench/pysym_bench.sh [K]
set -euo pipefail
cd "$(dirname "$0")/.."
K=${1:-20000}
BIN=build/bench/pysym_bench
make -s "$BIN"     # up to date: a stale binary would measure old code
pythons=()
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
	for p in "$HOME"/.pyenv/versions/$v.*/bin/python$v; do
		[[ -x "$p" ]] && pythons+=("$p")
	done
done
((${#pythons[@]})) || pythons=(python3)
for py in "${pythons[@]}"; do
	echo "== $py"
	"$BIN" -k "$K" -r 3 -p "$py"
done
