#!/usr/bin/env bash
# Two builds' Python stack walk, side by side: `bash bench/walk_compare.sh
# OLD NEW [DEPTH...]`, as root (not part of `make bench`: it compares
# builds).  For each depth (default 3 30 60), REPS (5) Python processes
# (bench/sidecost.py), each calling two copies of build/bench/push's
# cuLaunchKernel (entry `push %rbp`) in turn, ROUNDS (200) rounds of K (200)
# calls each: one copy recorded by OLD, the other by NEW, both with stacks.
# Prints, per depth, each build's entry program run time per call
# (kernel.bpf_stats_enabled; medians over the processes) and the median of
# NEW / OLD: of the entry programs' times, and of the calls' wall time per
# round (a round's blocks see the same speed of this VM).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/walk_compare.sh OLD_GPUBPF NEW_GPUBPF [DEPTH...]" >&2; exit 2; }
OLD=$1 NEW=$2
shift 2
DEPTHS=("$@")
[ ${#DEPTHS[@]} -gt 0 ] || DEPTHS=(3 30 60)
REPS=${REPS:-5}
K=${K:-200}
ROUNDS=${ROUNDS:-200}
PYTHON=${PYTHON:-python3}
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "walk_compare: $b is not an executable" >&2; exit 2; }
done
T=$(mktemp -d)
bpf_stats_on
rec=(--no-device --no-states --sample-hz 0 --stack-depth 64)

for d in "${DEPTHS[@]}"; do
	: >"$T/raw"
	for _ in $(seq "$REPS"); do
		side_copies build/bench/push/libcuda.so.1 "$T/libs" o n
		side_start "$T/ready" "$PYTHON" bench/sidecost.py -H "$d" "$K" "$ROUNDS" \
			"$T/libs/o/libcuda.so.1" "$T/libs/n/libcuda.so.1"
		# loaded in this order, so the first entry program listed is OLD's
		GPUBPF=$OLD gpubpf_attach "$T/o.err" "${rec[@]}" -p "$SIDE_PID" \
			--libcuda "$T/libs/o/libcuda.so.1" -o "$T/o.json"
		jo=$GB_JOB
		GPUBPF=$NEW gpubpf_attach "$T/n.err" "${rec[@]}" -p "$SIDE_PID" \
			--libcuda "$T/libs/n/libcuda.so.1" -o "$T/n.json"
		jn=$GB_JOB
		kill -USR1 "$SIDE_PID"
		side_done
		prog_stats gb_entry_multi > "$T/stats"
		stop_jobs "$jo" "$jn"
		side_end
		echo "$(awk '{ printf "%s ", $2 }' "$T/stats") $(side_ratio "$T/ready.rows" 2 1)" >>"$T/raw"
		rm -rf "$T/libs"
	done
	echo "depth $d: entry program old $(awk '{ print $1 }' "$T/raw" | median) ns, new $(awk '{ print $2 }' "$T/raw" | median) ns;" \
		"new / old: entry program $(awk '$1 > 0 { print $2 / $1 }' "$T/raw" | median | xargs printf '%.3f')," \
		"wall time per call $(awk '{ print $3 }' "$T/raw" | median | xargs printf '%.3f')"
done
