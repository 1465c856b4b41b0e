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
