#!/usr/bin/env bash
# Per-call cost by the probed entry's first instruction: section 7 of
# `make bench` (bench/run.sh), or alone: `bash bench/prologue_bench.sh`.
#
# For each prologue shape of bench/libcuda_bench.c (xor and sub: the kernel
# single-steps them; endbr64 first: single-stepped, but gpubpf probes the
# push after it; push %rbp: emulated), five copies of the library in one
# process (bench/sidecost.c): one untraced, one under an empty uprobe on
# cuLaunchKernel's entry (a perf-event link, what a generic tracer places),
# one under `gpubpf record -p` (entry only), one under an empty program
# through a uprobe_multi link (how gpubpf attaches), one under a program
# that makes only the helper calls of gpubpf's entry program for a launch
# (bench/launch_calls.h; also through a uprobe_multi link: the least
# gpubpf could cost on this machine); ROUNDS rounds of K
# calls of each copy in turn.  A round's five blocks see the same speed of
# this VM, which moves up to 2x from second to second, so each round gives
# gpubpf's overhead over each empty probe's; a repetition's figure is the
# median over its rounds, REPS repetitions in fresh processes.  Then the BPF run time per
# hit of gpubpf's entry program and of the empty one
# (kernel.bpf_stats_enabled), on one thread and two at once, and of
# gpubpf's with the reader stopped and by ring buffer size.  Writes its block of BENCHMARKS.md between the
# prologue-bench markers unless BENCH_MD=-.  Knobs: REPS (5), K (200),
# ROUNDS (300), STATS_N (20000), LAG_N (6000), RING_SIZES (the
# --buffer-size values, "4M 16M 64M 256M": calls' rings of 256K to 16M),
# GPUBPF (the binary to measure: another build's, to compare).
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REPS=${REPS:-5}
K=${K:-200}
ROUNDS=${ROUNDS:-300}
STATS_N=${STATS_N:-20000}
BENCH_MD=${BENCH_MD:-BENCHMARKS.md}
B=build/bench
GPUBPF=${GPUBPF:-build/gpubpf}
SHAPES=${SHAPES:-"xor sub endbr push"}
for f in $B/callcost $B/sidecost $B/empty_uprobe "$GPUBPF"; do
	[ -e "$f" ] || { echo "prologue_bench: $f missing (run make bench-bins)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/gpubpf-prologue.XXXXXX)
HELPERS=()
cleanup() {
	for p in "${HELPERS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT

# empty_on PID LIB [-m | -c]: the empty uprobe on LIB's cuLaunchKernel in
# PID (-m: through a uprobe_multi link; -c: the launch's calls through
# one); sets TP
empty_on() {
	local out=$T/tr${3:-}.out
	: > "$out"
	$B/empty_uprobe -p "$1" -l "$2" -f cuLaunchKernel ${3:-} > "$out" 2>&1 &
	TP=$!
	HELPERS+=("$TP")
	for _ in $(seq 1000); do grep -q '^attached' "$out" && return; sleep 0.01; done
	echo "prologue_bench: empty_uprobe did not attach" >&2; cat "$out" >&2; exit 1
}

# side SHAPE: one process calling the untraced, empty-probed,
# gpubpf-probed, empty-multi-probed and calls-probed copies in turn;
# appends "SHAPE u e g ratio m ratio-over-m c c-ratio" to $T/raw
side() {
	local d=$T/$1 tpe tpm
	side_copies "$B/$1/libcuda.so.1" "$d" u e g m c
	side_start "$T/ready" $B/sidecost -k "$K" -r "$ROUNDS" -w "$d/u/libcuda.so.1" \
		"$d/e/libcuda.so.1" "$d/g/libcuda.so.1" "$d/m/libcuda.so.1" "$d/c/libcuda.so.1"
	empty_on "$SIDE_PID" "$d/e/libcuda.so.1"
	tpe=$TP
	empty_on "$SIDE_PID" "$d/m/libcuda.so.1" -m
	tpm=$TP
	empty_on "$SIDE_PID" "$d/c/libcuda.so.1" -c
	gpubpf_attach "$T/gb.err" --no-device --libcuda "$d/g/libcuda.so.1" -p "$SIDE_PID" -o "$T/t.json"
	HELPERS+=("$GB_JOB")
	kill -USR1 "$SIDE_PID"
	wait "$SIDE_JOB"
	stop_jobs "$tpe" "$tpm" "$TP" "$GB_JOB"
	if ! grep -q "^gpubpf: $((K * ROUNDS)) events, 0 dropped" "$T/gb.err"; then
		echo "prologue_bench: gpubpf on $1 did not record $((K * ROUNDS)) events with 0 dropped:" \
			"$(grep '^gpubpf:' "$T/gb.err" | tail -1)" >&2
		ISSUES+="$1; "
	fi
	echo "$1 $(side_col "$T/ready.rows" 1) $(side_col "$T/ready.rows" 2) $(side_col "$T/ready.rows" 3)" \
		"$(side_ratio "$T/ready.rows" 3 2 1) $(side_col "$T/ready.rows" 4)" \
		"$(side_ratio "$T/ready.rows" 3 4 1) $(side_col "$T/ready.rows" 5)" \
		"$(side_ratio "$T/ready.rows" 5 2 1)" >> "$T/raw"
	rm -rf "$d"
}

start=$(date +%s)
ISSUES=
for rep in $(seq "$REPS"); do
	for shape in $SHAPES; do
		side "$shape"
		echo "rep $rep $shape: $(tail -1 "$T/raw" | awk '{ printf "untraced %s, empty uprobe %s, gpubpf %s ns/call; overhead ratio %.3f", $2, $3, $4, $5 }')"
	done
done

# BPF run time per hit: programs loaded after the snapshot whose run count
# equals the calls made
bpf_ns() { # mode shape [calls [lag [ring size [threads]]]] -> ns per hit of its entry program
	local first n=${3:-$STATS_N} ring=${5:-} threads=${6:-1}
	first=$(last_prog_id)
	side_start "$T/ready" $B/callcost -l "$B/$2/libcuda.so.1" -f launch -n "$n" -t "$threads" -w -H
	case $1 in
	empty) empty_on "$SIDE_PID" "$B/$2/libcuda.so.1" ;;
	gpubpf) gpubpf_attach "$T/tr.out" --no-device --libcuda "$B/$2/libcuda.so.1" \
			${ring:+--buffer-size "$ring"} -p "$SIDE_PID" -o "$T/t.json"
		TP=$GB_JOB
		HELPERS+=("$TP") ;;
	esac
	# lag: the recorder stopped while the calls are made
	[ -n "${4:-}" ] && kill -STOP "$TP"
	kill -USR1 "$SIDE_PID"
	side_done
	[ -n "${4:-}" ] && kill -CONT "$TP"
	bpftool -j prog show | python3 -c '
import json, sys
first, n = int(sys.argv[1]), int(sys.argv[2])
for p in json.load(sys.stdin):
    if p["id"] > first and p.get("name", "").startswith(("gb_entry", "empty_entry")) \
            and p.get("run_cnt") == n:
        print("%.0f" % (p["run_time_ns"] / n))' "$first" $((n * threads)) | head -1
	stop_jobs "$TP"
	side_end
}
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
BPF_EMPTY=$(for _ in 1 2 3; do bpf_ns empty push; done | median)
BPF_GB=$(for _ in 1 2 3; do bpf_ns gpubpf push; done | median)
# two threads at once, each on a CPU of its own mostly: calls go to each
# CPU's ring; into one shared ring they contend for its lock and positions
BPF_EMPTY2=$(for _ in 1 2 3; do bpf_ns empty push "$STATS_N" "" "" 2; done | median)
BPF_GB2=$(for _ in 1 2 3; do bpf_ns gpubpf push "$STATS_N" "" "" 2; done | median)
# 6000 launch records (~0.8 MB) fill this CPU's call ring (512 KiB on two
# CPUs), passing its wake threshold each quarter, and go on into the
# shared 1 MiB ring, while nobody reads them (the recorder stopped, its
# reader too): every record past a threshold used to force a wake-up
LAG_N=${LAG_N:-6000}
BPF_LAG=$(for _ in 1 2 3; do bpf_ns gpubpf push "$LAG_N" lag; done | median)
# the same calls with the recorder reading: a fresh ring, as cold
BPF_NOLAG=$(for _ in 1 2 3; do bpf_ns gpubpf push "$LAG_N"; done | median)
# the calls' rings' size (a sixteenth of --buffer-size, shared out among
# the CPUs' rings): each record is written to memory its ring last used a
# whole ring ago
RING_SIZES=${RING_SIZES:-"4M 16M 64M 256M"}
BPF_RING=
for r in $RING_SIZES; do
	per_cpu=$("$GPUBPF" record -v -q --no-device --buffer-size "$r" -o "$T/r.json" -- true 2>&1 |
		sed -n 's/^gpubpf: call rings: \([0-9]*\) KiB per CPU.*/\1K/p')
	BPF_RING+="${BPF_RING:+, }${per_cpu:-none} (\`--buffer-size $r\`) **$(for _ in 1 2 3; do bpf_ns gpubpf push "$STATS_N" "" "$r"; done | median) ns**"
done
sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"

block() {
	echo "<!-- prologue-bench:begin (generated by bench/prologue_bench.sh; edit outside these markers) -->"
	echo "### 7. Cost per call by the probed entry's first instruction"
	echo
	echo "- command: \`bash bench/prologue_bench.sh\` (part of \`make bench\`), as root"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$GPUBPF" = build/gpubpf ]; then
		echo "- gpubpf: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- user bpf 2>/dev/null || echo ' + uncommitted changes in user/ bpf/')"
	else
		echo "- gpubpf: $GPUBPF"
	fi
	echo "- $REPS repetitions, each one process calling five copies of build/bench/SHAPE/libcuda.so.1 in turn (bench/sidecost.c): untraced, under an empty uprobe on cuLaunchKernel (a perf-event link, as most tracers attach), under gpubpf record -p, under an empty program through a uprobe_multi link (as gpubpf attaches), under a program through such a link that makes only the helper calls of gpubpf's entry program for a launch (bench/launch_calls.h: cookie, pid, clock, the read of the stack arguments; the least gpubpf could cost here); $ROUNDS rounds of $K calls of each; took $(( $(date +%s) - start )) s"
	[ -n "$ISSUES" ] && echo "- **gpubpf lost or miscounted calls on:** $ISSUES"
	echo
	echo "| entry shape | gpubpf probes | untraced ns/call | empty uprobe on the entry | gpubpf record -p | gpubpf overhead / empty uprobe's (median of the repetitions'; range) | empty uprobe_multi on the entry | gpubpf overhead / empty uprobe_multi's | the launch's calls alone (uprobe_multi) | their overhead / empty uprobe's |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for shape in $SHAPES; do
		col() { awk -v s="$shape" -v c="$1" '$1 == s { print $c }' "$T/raw" | median; }
		ratios=$(awk -v s="$shape" '$1 == s { print $5 }' "$T/raw" | sort -g)
		ratios_m=$(awk -v s="$shape" '$1 == s { print $7 }' "$T/raw" | sort -g)
		ratios_c=$(awk -v s="$shape" '$1 == s { print $9 }' "$T/raw" | sort -g)
		where=$("$GPUBPF" list -v --libcuda "$B/$shape/libcuda.so.1" | awk '$1 == "cuLaunchKernel" {
			insn = ""; for (i = 6; i < NF; i++) insn = insn (insn ? " " : "") $i
			print ($5 == "-" ? "" : "entry" $5 ": ") "`" insn "` (" $NF ")" }')
		awk -v s="$shape" -v w="$where" -v u="$(col 2)" -v e="$(col 3)" -v g="$(col 4)" \
		    -v r="$(echo "$ratios" | median)" -v lo="$(echo "$ratios" | head -1)" -v hi="$(echo "$ratios" | tail -1)" \
		    -v m="$(col 6)" -v rm="$(echo "$ratios_m" | median)" -v mlo="$(echo "$ratios_m" | head -1)" \
		    -v mhi="$(echo "$ratios_m" | tail -1)" -v c="$(col 8)" -v rc="$(echo "$ratios_c" | median)" \
		    -v clo="$(echo "$ratios_c" | head -1)" -v chi="$(echo "$ratios_c" | tail -1)" 'BEGIN {
			printf "| %s | %s | %.1f | %.1f | %.1f | **%.2fx** (%.2f to %.2f) | %.1f | %.2fx (%.2f to %.2f) | %.1f | %.2fx (%.2f to %.2f) |\n",
				s, w, u, e, g, r, lo, hi, m, rm, mlo, mhi, c, rc, clo, chi }'
	done
	echo
	echo "BPF run time per hit on the push entry (kernel.bpf_stats_enabled, median of 3 runs of $STATS_N calls; excludes the trap): empty program **$BPF_EMPTY ns**, gpubpf's entry program **$BPF_GB ns**; two threads calling at once: **$BPF_EMPTY2 ns** and **$BPF_GB2 ns**; with the recorder stopped (SIGSTOP) during $LAG_N calls, so the unread records pass the wake-up threshold: **$BPF_LAG ns**, against **$BPF_NOLAG ns** for the same calls read as they come (each in a fresh ring, as cold). By the size of each CPU's call ring (a sixteenth of \`--buffer-size\`, at least 256K, shared out among the CPUs, at least 128K each: $(nproc) CPUs here): $BPF_RING."
	echo
	echo "<!-- prologue-bench:end -->"
}
block | tee "$T/block"
[ "$BENCH_MD" = - ] || splice_block prologue-bench "$T/block" "$BENCH_MD"
