#!/usr/bin/env bash
# The calls recorded at their entry (launches, async copies, memsets) go to
# a ring per CPU, sized from the calls' ring buffer (`record -v` says so;
# --autograd keeps one ring).  Threads on several CPUs, each one's calls
# through its CPUs' rings: every call is recorded once, and each thread's
# in the order made.  A CPU's ring full (the recorder stopped), the calls
# go on into the shared ring: more are kept than either holds alone, and
# recorded + dropped == made, exactly.
. "$(dirname "$0")/lib.sh"
test_description "record: per-CPU call rings"
require_bpf
BENCH="$GPUBPF_ROOT/build/bench"
LIB="$BENCH/push/libcuda.so.1"
require_file "$BENCH/callcost"
require_file "$LIB"

# possible CPUs, as libbpf counts them ("0-3,5")
NCPU=$(tr ',' '\n' </sys/devices/system/cpu/possible |
	awk -F- '{ n += ($2 == "" ? 1 : $2 - $1 + 1) } END { print n }')
# the per-CPU size for a calls' ring of $1 KiB: the largest power of two,
# at least 128 KiB, of which NCPU fit in it
per_cpu() {
	awk -v r="$1" -v n="$NCPU" 'BEGIN { s = 128; while (s * 2 * n <= r) s *= 2; print s }'
}
rings() {
	"$GPUBPF" record -v -q --no-device "$@" -o "$TMPD/r.json" -- true 2>&1 | grep '^gpubpf: call rings'
}
is "-v: one ring per CPU, sharing out the calls' 1 MiB" "$(rings)" \
	"gpubpf: call rings: $(per_cpu 1024) KiB per CPU ($NCPU CPUs) for the calls recorded at their entry"
is "--buffer-size 3M: the calls' 256 KiB shared out" "$(rings --buffer-size 3M)" \
	"gpubpf: call rings: $(per_cpu 256) KiB per CPU ($NCPU CPUs) for the calls recorded at their entry"
is "--autograd: none" "$(rings --autograd)" \
	"gpubpf: call rings: none, every call through the first ring buffer"

# per_thread_order FILE: "true" when each thread's launches, by time, were
# made on streams 0, 1, ..., 7, 0, ... (launch i of a thread is on stream i & 7)
per_thread_order() {
	json_query "$1" '(lambda by: all(s == [i & 7 for i in range(len(s))] for s in by.values()) and len(by))(
 {t: [int(e["args"]["stream"], 16) for e in sorted((e for e in ev if e.get("name") == "cuLaunchKernel"
  and e["tid"] == t), key=lambda e: e["ts"])] for t in set(e["tid"] for e in ev if e.get("name") == "cuLaunchKernel")})'
}

# three threads on two CPUs or more, together at most 600,000 launches a
# second: on a VM whose traps are cheap, as fast as they go is 3-4 million,
# past what the reader copies out (BENCHMARKS.md section 3).  The rings are
# sized for a stall of the reader: three threads spinning on two CPUs, a
# clean-clone run lost 1.3% at the default size (2 MiB of calls' rings,
# ~25 ms at this rate); 64M gives them 2 MiB a CPU and 4 MiB shared
N=60000
"$GPUBPF" record -q --no-device --no-states --sample-hz 0 --stack none --libcuda "$LIB" --buffer-size 64M \
	-o "$TMPD/threads.json" -- "$BENCH/callcost" -l "$LIB" -f launch -n $N -t 3 -r 600000 \
	>"$TMPD/threads.out" 2>"$TMPD/threads.err"
is "3 threads: record exits 0" "$?" 0
like "3 threads: $((3 * N)) launches, none dropped" "$(grep '^gpubpf: .* events' "$TMPD/threads.err")" \
	"^gpubpf: $((3 * N + 1)) events, 0 dropped"
is "3 threads: every launch in the trace once" \
	"$(json_query "$TMPD/threads.json" 'len([e for e in ev if e.get("name") == "cuLaunchKernel"])')" $((3 * N))
is "3 threads: each one's launches in the order made" "$(per_thread_order "$TMPD/threads.json")" 3

# one thread on CPU 0 while the recorder is stopped: this CPU's ring
# (4096 launches of 128 bytes at 512 KiB) fills, then the shared ring
# (7,710 of 136 bytes at 1 MiB), then calls are refused
M=20000
KEEP=$(( $(per_cpu 1024) * 1024 / 128 ))
rm -f "$TMPD/ready"
taskset -c 0 "$BENCH/callcost" -l "$LIB" -f launch -n $M -w -H -R "$TMPD/ready" >"$TMPD/stop.cc" 2>&1 &
wait_for_file "$TMPD/ready" 20
pid=$(cat "$TMPD/ready")
"$GPUBPF" record -q --no-device --no-states --sample-hz 0 --stack none --libcuda "$LIB" -p "$pid" \
	-o "$TMPD/stop.json" >/dev/null 2>"$TMPD/stop.err" &
g=$!
wait_recording "$TMPD/stop.err"
kill -STOP "$g"
kill -USR1 "$pid"
wait_for_file "$TMPD/ready.done" 120
kill -CONT "$g"
sleep 0.5
kill -INT "$g"
wait "$g"
is "stopped: record exits 0" "$?" 0
kill -USR1 "$pid"
wait
recorded=$(json_query "$TMPD/stop.json" 'len([e for e in ev if e.get("name") == "cuLaunchKernel"])')
dropped=$(tr '\r' '\n' <"$TMPD/stop.err" | sed -n 's/^gpubpf: [0-9]* events, \([0-9]*\) dropped.*/\1/p')
cmp_ok "stopped: more kept ($recorded) than this CPU's ring holds ($KEEP) or the shared ring (7710)" \
	"$recorded" -gt $(( KEEP > 7710 ? KEEP : 7710 ))
cmp_ok "stopped: calls refused once both were full ($dropped)" "${dropped:-0}" -gt 0
# the worker's exit is refused too unless the shared ring still had room
# for its 40 bytes; kept, it names the thread (gone before it is decoded)
exit_kept=$(launcher_named "$TMPD/stop.json")
is "stopped: recorded + dropped == the launches made + the worker's exit if refused, exactly" \
	"$(( recorded + dropped ))" $(( M + 1 - exit_kept ))
is "stopped: those kept in the order made" "$(per_thread_order "$TMPD/stop.json")" 1
is "stopped: the trace counts them under the job's pid, and in all" "$(json_query "$TMPD/stop.json" \
	'[d["gpubpf"]["dropped_events"], d["gpubpf"]["dropped_total"]]')" "[{\"$pid\": $dropped}, $dropped]"
perfetto_ok "$TMPD/stop.json"

# the same under -- CMD, whose command has exited, its exit recorded, when
# the counts are read: they are its pid's (they were put under pid +
# 4194304, the number of a later process of that pid, which never was)
rm -f "$TMPD/ready" "$TMPD/ready.done"
"$GPUBPF" record -q --no-device --no-states --sample-hz 0 --stack none --libcuda "$LIB" \
	-o "$TMPD/cmd.json" -- taskset -c 0 "$BENCH/callcost" -l "$LIB" -f launch -n $M -w -H \
	-R "$TMPD/ready" >"$TMPD/cmd.cc" 2>"$TMPD/cmd.err" &
g=$!
wait_for_file "$TMPD/ready" 20
pid=$(cat "$TMPD/ready")
kill -STOP "$g"
kill -USR1 "$pid"
wait_for_file "$TMPD/ready.done" 120
kill -CONT "$g"
sleep 0.5       # it reads what the rings hold: the command's exit is recorded
kill -USR1 "$pid"
wait "$g"
is "-- CMD stopped: record exits with the command's 0" "$?" 0
dropped=$(tr '\r' '\n' <"$TMPD/cmd.err" | sed -n 's/^gpubpf: [0-9]* events, \([0-9]*\) dropped.*/\1/p')
cmp_ok "-- CMD stopped: calls refused ($dropped)" "${dropped:-0}" -gt 0
is "-- CMD stopped: the trace counts them under the command's pid, and in all" \
	"$(json_query "$TMPD/cmd.json" '[d["gpubpf"]["dropped_events"], d["gpubpf"]["dropped_total"]]')" \
	"[{\"$pid\": $dropped}, $dropped]"
done_testing
