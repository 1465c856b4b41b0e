#!/usr/bin/env bash
# Two builds' Python stack walk, side by side: `bash bench/walk_compare.sh
# OLD NEW [DEPTH...]`, as root (not part of `make bench`: it compares
# builds).  For each depth (default 3 30 60), PAIRS (10) pairs of
# recordings, the two builds back to back in alternating order, of
# bench/stackcost.py's 100000 launches (build/bench/push, entry `push
# %rbp`) with stacks; per recording the entry program's mean run time
# (kernel.bpf_stats_enabled).  Prints each build's median and the median of
# the pairs' NEW / OLD ratios: pairs share what other jobs on these CPUs do
# at that moment, which moves both builds' figures alike.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/walk_compare.sh OLD_GPUBPF NEW_GPUBPF [DEPTH...]" >&2; exit 2; }
OLD=$1 NEW=$2
shift 2
DEPTHS=("$@")
[ ${#DEPTHS[@]} -gt 0 ] || DEPTHS=(3 30 60)
PAIRS=${PAIRS:-10}
PYTHON=${PYTHON:-python3}
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "walk_compare: $b is not an executable" >&2; exit 2; }
done
export LD_LIBRARY_PATH="$PWD/build/bench/push"
T=$(mktemp -d)
bpf_stats_on

# entry BUILD DEPTH -> the entry program's ns per call, with stacks
entry() {
	with_prog_stats gb_entry_multi "$T/stats" "$T/out" "$1" record -q --no-device --no-states \
		--sample-hz 0 --libcuda build/bench/push/libcuda.so.1 --stack-depth 64 -o "$T/t.json" \
		-- "$PYTHON" bench/stackcost.py "$2" 100000
	awk '{ print $2 }' "$T/stats"
}

for d in "${DEPTHS[@]}"; do
	: >"$T/raw"
	for i in $(seq "$PAIRS"); do
		if ((i % 2)); then o=$(entry "$OLD" "$d"); n=$(entry "$NEW" "$d")
		else n=$(entry "$NEW" "$d"); o=$(entry "$OLD" "$d"); fi
		echo "$o $n" >>"$T/raw"
	done
	echo "depth $d: old $(awk '{ print $1 }' "$T/raw" | median) ns, new $(awk '{ print $2 }' "$T/raw" | median) ns;" \
		"new / old: median $(awk '$1 > 0 { print $2 / $1 }' "$T/raw" | median | xargs printf '%.2f') (new faster in $(awk '$2 < $1' "$T/raw" | wc -l) of $PAIRS pairs)"
done
