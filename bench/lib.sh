# shellcheck shell=bash
# Source from the bench scripts: their shared helpers.

# median [EMPTY]: the median of the numbers on standard input, one a line
# (the mean of the two middle ones for an even count); EMPTY (default
# "nan", which printf and awk still take for a number) when there are none.
median() {
	sort -g | awk -v none="${1:-nan}" '{ v[NR] = $1 } END { if (!NR) { print none; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# splice_block NAME BLOCK MD: put the file
# BLOCK, which begins with a "<!-- NAME:begin" line and ends with
# "<!-- NAME:end -->", in place of MD's block between those markers, or
# append it to MD when MD has none.
splice_block() {
	local name=$1 block=$2 md=$3 tmp
	if [ -f "$md" ] && grep -q "^<!-- $name:begin" "$md"; then
		tmp=$(mktemp "$md.XXXXXX") || return 1
		awk -v f="$block" -v b="^<!-- $name:begin" -v e="^<!-- $name:end" '
			$0 ~ b { while ((getline l < f) > 0) print l; skip = 1; next }
			$0 ~ e { skip = 0; next } !skip' "$md" > "$tmp" && cat "$tmp" > "$md"
		rm -f "$tmp"
	else
		{ [ -f "$md" ] && echo; cat "$block"; } >> "$md"
	fi
}

# bpf_stats_on: kernel.bpf_stats_enabled on until the script exits; then
# it is set back and the script's temporary directory $T removed.
bpf_stats_on() {
	local old
	old=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	trap 'sysctl -qw kernel.bpf_stats_enabled='"$old"'; rm -rf "$T"' EXIT
}

# last_prog_id: the highest id of the BPF programs loaded now (0: none);
# a program loaded later has a higher one.
last_prog_id() {
	bpftool -j prog show 2>/dev/null |
		python3 -c 'import json,sys; print(max([p["id"] for p in json.load(sys.stdin)] or [0]))'
}

# prog_stats PREFIX: "name ns/run runs" of each loaded BPF program whose
# name starts with PREFIX and that has run (kernel.bpf_stats_enabled on).
prog_stats() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name", "").startswith(sys.argv[1]) and p.get("run_cnt"):
        print(p["name"], "%.0f" % (p["run_time_ns"] / p["run_cnt"]), p["run_cnt"])' "$1" \
		2>/dev/null || true
}

# with_prog_stats PREFIX STATS OUT CMD...: run CMD (a recording) with its
# standard output in OUT, sampling prog_stats PREFIX until it ends: the
# last sample, taken while its programs were still loaded, in STATS.
with_prog_stats() {
	local prefix=$1 stats=$2 out=$3 g s
	shift 3
	: >"$stats"
	"$@" >"$out" 2>/dev/null &
	g=$!
	while kill -0 "$g" 2>/dev/null; do
		s=$(prog_stats "$prefix")
		[[ -n "$s" ]] && echo "$s" >"$stats"
		sleep 0.1
	done
	wait "$g" || true
}

# Side by side: bench/sidecost.c and bench/sidecost.py call copies of one
# library, each at its own path, in turn in one process, and print a line
# a round of each copy's ns per call.
#
# side_copies LIB DIR NAME...: a copy of LIB at DIR/NAME/libcuda.so.1 for each NAME.
side_copies() {
	local lib=$1 dir=$2 name
	shift 2
	for name in "$@"; do
		mkdir -p "$dir/$name"
		cp "$lib" "$dir/$name/libcuda.so.1"
	done
}

# side_start READY CMD...: start CMD (sidecost, handshake file READY) in
# the background, its rows in READY.rows; wait until it waits for SIGUSR1.
# Sets SIDE_PID, SIDE_JOB and SIDE_READY.
side_start() {
	local ready=$1
	shift
	rm -f "$ready" "$ready.done"
	SIDE_READY=$ready
	"$@" -R "$ready" > "$ready.rows" 2> "$ready.err" &
	SIDE_JOB=$!
	for _ in $(seq 1000); do [ -s "$ready" ] && break; sleep 0.01; done
	SIDE_PID=$(cat "$ready" 2>/dev/null) ||
		{ echo "bench: $1 did not get ready:" >&2; cat "$ready.err" >&2; return 1; }
}

# walk_depth DEPTH PAD: the --stack-depth that records sidecost.py's DEPTH
# frames: with PAD (sidecost.py -P PAD), DEPTH, so that the walk stops
# above the two frames that place them; without, 64 (the whole stack).
walk_depth() {
	if [ "$2" = 0 ]; then echo 64; else echo "$1"; fi
}

# side_done: wait until the side job, started with -H, has done its work
# and holds (its tracers still attached, their statistics readable).
side_done() {
	until [ -e "$SIDE_READY.done" ]; do
		kill -0 "$SIDE_JOB" 2>/dev/null ||
			{ echo "bench: the side job ended before its work was done:" >&2
			  cat "$SIDE_READY.err" >&2; return 1; }
		sleep 0.01
	done
}

# side_end: let the side job held by -H exit, and reap it.
side_end() {
	kill -USR1 "$SIDE_PID"
	wait "$SIDE_JOB"
}

# stop_jobs PID...: interrupt tracers (each may have ended already, with
# its target) and reap them.
stop_jobs() {
	kill -INT "$@" 2>/dev/null || true
	wait "$@" || true
}

# gpubpf_attach ERR ARGS...: $GPUBPF record -q ARGS... in the background,
# its standard error in ERR, and wait until it records.  Sets GB_JOB.
gpubpf_attach() {
	local err=$1
	shift
	"$GPUBPF" record -q "$@" > /dev/null 2> "$err" &
	GB_JOB=$!
	for _ in $(seq 3000); do
		grep -qs '^gpubpf: recording' "$err" && return 0
		kill -0 "$GB_JOB" 2>/dev/null || break
		sleep 0.01
	done
	echo "bench: gpubpf did not attach:" >&2
	cat "$err" >&2
	return 1
}

# side_ratio ROWS A B [U]: the median over ROWS' rounds of column A over
# column B (columns from 1), or with U of their excess over column U.
side_ratio() {
	awk -v a="$2" -v b="$3" -v u="${4:-0}" '{ base = u ? $u : 0
		if ($b - base > 0) print ($a - base) / ($b - base) }' "$1" | median
}

# side_col ROWS C: the median of column C.
side_col() {
	awk -v c="$2" '{ print $c }' "$1" | median
}
