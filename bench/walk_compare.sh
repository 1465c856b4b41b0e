#!/usr/bin/env bash
# Two gpubpf builds side by side: `bash bench/walk_compare.sh OLD NEW
# [DEPTH...]`, as root (not part of `make bench`: it compares builds).
# For each depth (default 3 30 60), REPS (5) processes, each calling three
# copies of build/bench/push's cuLaunchKernel (entry `push %rbp`) in turn,
# ROUNDS (200) rounds of K (200) calls each: one copy untraced, one
# recorded by OLD, one by NEW.  Depth 0: the calls come from C
# (bench/sidecost.c), recorded with --stack none; depth N: from a Python
# stack of N frames (bench/sidecost.py), recorded with stacks.  The two
# recorders attach OLD first, then NEW first, from one process to the
# next (the one attached second measures a few percent slower).  Prints,
# per depth, each build's entry program run time per call
# (kernel.bpf_stats_enabled; medians over the processes) and the median
# of NEW / OLD: of the entry programs' times, and of the calls' overhead
# over the untraced copy's, round by round (a round's blocks see the same
# speed of this VM).  Checks that both builds lost no call.  PAD (0; else
# sidecost.py -P PAD: the frames walked sit PAD bytes up the data stack, on
# two more that the walk, to DEPTH frames, does not reach).
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
PAD=${PAD:-0}
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "walk_compare: $b is not an executable" >&2; exit 2; }
done
T=$(mktemp -d)
bpf_stats_on
N=$((K * ROUNDS))

# attach NAME BUILD OPTS...: record copy NAME with BUILD; sets JOB_NAME,
# and AFTER_NAME: the highest program id loaded once it records
attach() {
	local name=$1 build=$2
	shift 2
	GPUBPF=$build gpubpf_attach "$T/$name.err" "$@" -p "$SIDE_PID" \
		--libcuda "$T/libs/$name/libcuda.so.1" -o "$T/$name.json"
	printf -v "JOB_$name" %s "$GB_JOB"
	printf -v "AFTER_$name" %s "$(last_prog_id)"
}

for d in "${DEPTHS[@]}"; do
	: >"$T/raw"
	if [ "$d" = 0 ]; then
		rec=(--no-device --no-states --sample-hz 0 --stack none)
	else
		rec=(--no-device --no-states --sample-hz 0 --stack-depth "$(walk_depth "$d" "$PAD")")
	fi
	for rep in $(seq "$REPS"); do
		side_copies build/bench/push/libcuda.so.1 "$T/libs" u o n
		libs=("$T/libs/u/libcuda.so.1" "$T/libs/o/libcuda.so.1" "$T/libs/n/libcuda.so.1")
		before=$(last_prog_id)
		if [ "$d" = 0 ]; then
			side_start "$T/ready" build/bench/sidecost -k "$K" -r "$ROUNDS" -w -H "${libs[@]}"
		else
			side_start "$T/ready" "$PYTHON" bench/sidecost.py -H -P "$PAD" "$d" "$K" "$ROUNDS" "${libs[@]}"
		fi
		if [ $((rep % 2)) = 1 ]; then
			attach o "$OLD" "${rec[@]}"; attach n "$NEW" "${rec[@]}"
			lo_o=$before lo_n=$AFTER_o
		else
			attach n "$NEW" "${rec[@]}"; attach o "$OLD" "${rec[@]}"
			lo_n=$before lo_o=$AFTER_n
		fi
		kill -USR1 "$SIDE_PID"
		side_done
		# each recorder's entry program: loaded after it started, by the time it recorded
		read -r ns_o ns_n < <(bpftool -j prog show | python3 -c '
import json, sys
n, lo, ho, ln, hn = map(int, sys.argv[1:])
got = {}
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("gb_entry") and p.get("run_cnt") == n:
        for k, a, b in (("o", lo, ho), ("n", ln, hn)):
            if a < p["id"] <= b:
                got[k] = "%.0f" % (p["run_time_ns"] / n)
print(got.get("o", "nan"), got.get("n", "nan"))' "$N" "$lo_o" "$AFTER_o" "$lo_n" "$AFTER_n")
		stop_jobs "$JOB_o" "$JOB_n"
		side_end
		for x in o n; do
			grep -q "^gpubpf: [0-9]* events, 0 dropped" "$T/$x.err" ||
				{ echo "walk_compare: the $x build lost calls:" \
					"$(grep '^gpubpf:' "$T/$x.err" | tail -1)" >&2; exit 1; }
		done
		echo "$ns_o $ns_n $(side_ratio "$T/ready.rows" 3 2 1)" >>"$T/raw"
		rm -rf "$T/libs"
	done
	echo "depth $d: entry program old $(awk '{ print $1 }' "$T/raw" | median) ns, new $(awk '{ print $2 }' "$T/raw" | median) ns;" \
		"new / old: entry program $(awk '$1 > 0 { print $2 / $1 }' "$T/raw" | median | xargs printf '%.3f')," \
		"overhead per call $(awk '{ print $3 }' "$T/raw" | median | xargs printf '%.3f')"
done
