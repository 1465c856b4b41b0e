#!/usr/bin/env bash
# Two gpubpf builds side by side: what a change to the probes costs or saves.
#
#	bash bench/ab_bench.sh GPUBPF_A GPUBPF_B [REPS]
#
# One process (bench/sidecost.c) calls three copies of the push-entry
# bench library in turn, ROUNDS rounds of K cuLaunchKernel calls of each:
# one untraced, one recorded by build A (`record -p`), one by build B.
# A round's blocks see the same speed of this VM, which moves up to 2x
# from second to second, so each round gives B's overhead over A's.  The
# two recorders attach in turn A first and B first from one repetition to
# the next (the second attached measures a few percent slower).  Prints,
# per repetition and then as medians, each build's BPF entry program run
# time per hit (kernel.bpf_stats_enabled) and B's wall overhead over A's;
# checks that both recorded every call with none lost.  Not part of `make
# bench` (it needs two builds: keep the old one's build/gpubpf aside).
# Knobs: K (200), ROUNDS (300), LIB (build/bench/push/libcuda.so.1).
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bash bench/ab_bench.sh GPUBPF_A GPUBPF_B [REPS]" >&2; exit 2; }
GA=$1 GB=$2 REPS=${3:-6}
K=${K:-200}
ROUNDS=${ROUNDS:-300}
LIB=${LIB:-build/bench/push/libcuda.so.1}
for f in build/bench/sidecost "$LIB" "$GA" "$GB"; do
	[ -e "$f" ] || { echo "ab_bench: $f missing (run make bench-bins)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/gpubpf-ab.XXXXXX)
bpf_stats_on
N=$((K * ROUNDS))

last_prog() {
	bpftool -j prog show | python3 -c 'import json,sys; print(max([p["id"] for p in json.load(sys.stdin)] or [0]))'
}

# attach NAME BUILD: record copy NAME with BUILD; sets JOB_NAME and the
# highest program id loaded so far in AFTER_NAME
attach() {
	GPUBPF=$2 gpubpf_attach "$T/$1.err" --no-device --libcuda "$T/$1/libcuda.so.1" \
		-p "$SIDE_PID" -o "$T/$1.json"
	printf -v "JOB_$1" %s "$GB_JOB"
	printf -v "AFTER_$1" %s "$(last_prog)"
}

for rep in $(seq "$REPS"); do
	side_copies "$LIB" "$T" u a b
	before=$(last_prog)
	side_start "$T/ready" build/bench/sidecost -k "$K" -r "$ROUNDS" -w -H \
		"$T/u/libcuda.so.1" "$T/a/libcuda.so.1" "$T/b/libcuda.so.1"
	if [ $((rep % 2)) = 1 ]; then
		attach a "$GA"; attach b "$GB"; lo_a=$before lo_b=$AFTER_a
	else
		attach b "$GB"; attach a "$GA"; lo_b=$before lo_a=$AFTER_b
	fi
	kill -USR1 "$SIDE_PID"
	side_done
	# the entry program loaded by each recorder: ids after its start, up to its end
	read -r ns_a ns_b < <(bpftool -j prog show | python3 -c '
import json, sys
n, la, ha, lb, hb = map(int, sys.argv[1:])
got = {}
for p in json.load(sys.stdin):
    if p.get("name", "").startswith("gb_entry") and p.get("run_cnt") == n:
        for k, lo, hi in (("a", la, ha), ("b", lb, hb)):
            if lo < p["id"] <= hi:
                got[k] = "%.0f" % (p["run_time_ns"] / n)
print(got.get("a", "nan"), got.get("b", "nan"))' "$N" "$lo_a" "$AFTER_a" "$lo_b" "$AFTER_b")
	stop_jobs "$JOB_a" "$JOB_b"
	side_end
	for x in a b; do
		grep -q "^gpubpf: $N events, 0 dropped" "$T/$x.err" ||
			{ echo "ab_bench: build $x did not record $N calls with none lost:" \
				"$(grep '^gpubpf:' "$T/$x.err" | tail -1)" >&2; exit 1; }
	done
	ratio=$(side_ratio "$T/ready.rows" 3 2 1)
	echo "$ns_a $ns_b $ratio" >> "$T/raw"
	echo "rep $rep ($([ $((rep % 2)) = 1 ] && echo "A first" || echo "B first")): BPF ns/hit A $ns_a, B $ns_b;" \
		"ns/call untraced $(side_col "$T/ready.rows" 1), A $(side_col "$T/ready.rows" 2)," \
		"B $(side_col "$T/ready.rows" 3); B's overhead / A's $ratio"
	rm -rf "$T/u" "$T/a" "$T/b"
done
col() { awk -v c="$1" '{ print $c }' "$T/raw" | median; }
echo "median of $REPS: BPF ns/hit A $(col 1), B $(col 2) (B/A $(awk '{ if ($1 > 0) print $2 / $1 }' "$T/raw" | median)); B's wall overhead / A's $(col 3)"
