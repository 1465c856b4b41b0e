#!/usr/bin/env bash
# The ring buffer is read on a thread of its own: while the thread that
# decodes records is held still (as writing a part, or naming a process's
# frames, holds it), the calls made meanwhile wait in memory, not in the
# kernel's ring (1 MiB for calls by default), and none is lost, though
# they overflow it twenty times.  Past what may wait (--memory, at least 16M) the
# ring fills and the calls it refuses are counted: recorded + dropped ==
# made, exactly.  --buffer-size sizes the GPU records' ring; the calls'
# ring is a sixteenth of it, at least 256 KiB.
. "$(dirname "$0")/lib.sh"
test_description "record: calls made while the collector is held wait in memory"
require_bpf
BENCH="$GPUBPF_ROOT/build/bench"
LIB="$BENCH/push/libcuda.so.1"
HOLD="$GPUBPF_ROOT/build/tests/hold_thread"
require_file "$BENCH/callcost"
require_file "$LIB"
require_file "$HOLD"

# rings SIZE: the two sizes record -v says it made with --buffer-size SIZE
rings() {
	"$GPUBPF" record -v -q --no-device ${1:+--buffer-size "$1"} -o "$TMPD/r.json" -- true 2>&1 |
		sed -n 's/^gpubpf: ring buffers: \([0-9]*\) KiB for calls and the rest, \([0-9]*\) KiB for GPU records$/\1 \2/p'
}
is "ring buffers by default: 1 MiB for calls, 16 MiB for GPU records" "$(rings)" "1024 16384"
is "--buffer-size 64M: 4 MiB and 64 MiB" "$(rings 64M)" "4096 65536"
is "--buffer-size 3M: rounded up to 4 MiB, and 256 KiB (the least) for calls" "$(rings 3M)" "256 4096"

N=150000        # launch records of 136 bytes: ~20 MB
# made at most this fast: on a VM whose traps are cheap the stub's loop
# makes 3-4 million launches a second, past what the reader copies out
# (BENCHMARKS.md section 3); 500,000 a second is still 0.3 s for all
RATE=500000
# held_run NAME RECORD-OPTS...: callcost makes N launches while gpubpf
# records it with RECORD-OPTS, gpubpf's main thread held from before the
# first launch until after the last; sets EVENTS, DROPPED, LAUNCHES
held_run() {
	local name=$1 ready=$TMPD/$1.ready pid g h
	shift
	rm -f "$ready" "$TMPD/$name.go"
	# -H: once done it waits, to exit once the recording is over
	"$BENCH/callcost" -l "$LIB" -f launch -n $N -r $RATE -w -H -R "$ready" >"$TMPD/$name.cc" 2>&1 &
	wait_for_file "$ready" 20
	pid=$(cat "$ready")
	# the launches are its only records (no thread states, samples or
	# wakes), but for its worker thread's exit
	"$GPUBPF" record -q --no-device --no-states --sample-hz 0 --stack none --libcuda "$LIB" -p "$pid" \
		-o "$TMPD/$name.json" "$@" \
		>/dev/null 2>"$TMPD/$name.err" &
	g=$!
	wait_recording "$TMPD/$name.err"
	"$HOLD" "$g" "$TMPD/$name.go" >"$TMPD/$name.hold" 2>&1 &
	h=$!
	wait_for_cmd 20 grep -q held "$TMPD/$name.hold"
	is "$name: gpubpf's main thread is held" "$(cat "$TMPD/$name.hold")" "held"
	# nice, the 19th field of each thread's stat (17th after "pid (comm)")
	NICES=$(for t in /proc/"$g"/task/*; do sed 's/.*) //' "$t/stat" | awk '{ print $17 }'; done |
		sort -n | tr '\n' ' ')
	kill -USR1 "$pid"
	wait_for_file "$ready.done" 120
	ok "$name: the $N launches were made while it was held" grep -q "calls=$N " "$TMPD/$name.cc"
	like "$name: gpubpf still held then" "$(cat "$TMPD/$name.hold")" "^held$"
	sleep 1         # held a second more: a full queue's reader waits through it
	touch "$TMPD/$name.go"
	wait "$h"
	# stopped before callcost exits: its exit is not a record to count
	kill -INT "$g"
	# the trace is written to a temporary file beside it, once recording
	# has ended: the main thread's nice then
	EXPORT_NICE=
	for _ in $(seq 2000); do
		if compgen -G "$TMPD/.$name.json.*" >/dev/null; then
			EXPORT_NICE=$(sed 's/.*) //' "/proc/$g/task/$g/stat" | awk '{ print $17 }')
			break
		fi
		kill -0 "$g" 2>/dev/null || break
		sleep 0.01
	done
	wait "$g"
	is "$name: record stopped by SIGINT once released, exit 0" "$?" 0
	kill -USR1 "$pid"
	wait
	EVENTS=$(tr '\r' '\n' <"$TMPD/$name.err" | sed -n 's/^gpubpf: \([0-9]*\) events, \([0-9]*\) dropped.*/\1/p')
	DROPPED=$(tr '\r' '\n' <"$TMPD/$name.err" | sed -n 's/^gpubpf: \([0-9]*\) events, \([0-9]*\) dropped.*/\2/p')
	LAUNCHES=$(json_query "$TMPD/$name.json" 'len([e for e in ev if e.get("name") == "cuLaunchKernel"])')
	# the worker is named only by its exit's record (gone before it is decoded)
	EXIT_KEPT=$(launcher_named "$TMPD/$name.json")
}

held_run ring1m
# woken as a ring passes a quarter full, the reader must run at once, not
# after whichever thread holds the CPU has used up its time slice
# and so must the collector's, while the traced threads take every CPU
is "while recording, the reader's thread and the collector's run at nice -20" "$NICES" "-20 -20 "
is "the trace is written at the nice gpubpf was started with" "$EXPORT_NICE" "$(nice)"
is "1 MiB ring: every launch is in the trace" "$LAUNCHES" $N
is "1 MiB ring: nothing dropped" "$DROPPED" 0
is "1 MiB ring: no word of a recorder that fell behind" "$(grep -c "fell behind" "$TMPD/ring1m.err")" 0

# --memory 1M: at most 16 MiB wait, of the ~20 MB
held_run capped --memory 1M
cmp_ok "past what may wait, launches were refused ($DROPPED)" "${DROPPED:-0}" -gt 0
# the worker thread exits as its last launch returns: its exit's record is
# refused too, unless the ring still had room for it (40 bytes, where a
# launch takes 136): then it names the thread in the trace
is "recorded + dropped == the launches made + the worker's exit if refused, exactly" \
	"$(( LAUNCHES + DROPPED ))" $(( N + 1 - EXIT_KEPT ))
cmp_ok "and about 16 MiB of them waited ($LAUNCHES launches recorded)" "$LAUNCHES" -gt 110000
# launch i is made on stream i & 7
is "those recorded are the first made, in order" "$(json_query "$TMPD/capped.json" '
[int(e["args"]["stream"], 16) for e in sorted((e for e in ev if e.get("name") == "cuLaunchKernel"),
 key=lambda e: e["ts"])] == [i & 7 for i in range(len([e for e in ev if e.get("name") == "cuLaunchKernel"]))]')" true
# it says why, and how long the rings went unread: about as long as held
like "the summary says the queue was full and for how long" \
	"$(tr '\r' '\n' <"$TMPD/capped.err" | grep 'fell behind')" \
	'^gpubpf: the recorder fell behind: its queue of records to decode was full \(16 MiB: --memory, at least 16M\) and the ring buffers went unread for [0-9.]+ s in all; a larger --memory holds more$'
unread=$(tr '\r' '\n' <"$TMPD/capped.err" | sed -n 's/.* went unread for \([0-9.]*\) s in all.*/\1/p')
ok "the rings went unread for more than the second held after the last launch ($unread s)" \
	awk -v u="$unread" 'BEGIN { exit !(u > 1) }'
perfetto_ok "$TMPD/capped.json"
done_testing
