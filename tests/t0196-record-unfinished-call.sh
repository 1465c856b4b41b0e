#!/usr/bin/env bash
# A call still in the driver when the recording stops (a job hung in a
# sync, attached with -p -d): in the trace, flagged unfinished, its slice
# running to the recording's end, with its Python stack; in the report, by
# the line that made it; kept by convert both ways.  A process killed in
# such a call: its slice ends with the process, not the recording.  A job
# hung before the recording began, which makes no call in it: its threads'
# states, each from the start with the Python stack it waits in, on each
# CPython (3.11+ find a thread's by its native id, older by glibc's).
. "$(dirname "$0")/lib.sh"
test_description "record: calls still in flight when the recording stops"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
WORK="$GPUBPF_ROOT/tests/py/hang_sync.py"
line=$(grep -n '# the hang$' "$WORK" | cut -d: -f1)
sline=$(grep -n '# the sleeper$' "$WORK" | cut -d: -f1)

# start NAME [PYTHON]: a job of its own, its pid in $TMPD/NAME once it has made its
# first calls; it hangs once $TMPD/NAME.go exists
start() {
	rm -f "$TMPD/$1" "$TMPD/$1.go" "$TMPD/$1.hangs"
	"${2:-$PY}" "$WORK" "$TMPD/$1" 60 >/dev/null 2>&1 &
	at_exit "kill -9 $! 2>/dev/null"
	wait_for_file "$TMPD/$1" 20
}

# the calls of pid $2 in trace $1: [name, unfinished, has ret] each, in order
calls_of() {
	json_query "$1" "[[e['name'], e['args'].get('unfinished', False), 'ret' in e['args']]
		for e in sorted(ev, key=lambda e: e.get('ts', 0)) if e.get('cat') == 'cuda_api' and e['pid'] == $2]"
}

start a
a=$(cat "$TMPD/a")
"$GPUBPF" record -p "$a" -d 3s -o "$TMPD/h.json" 2>"$TMPD/h.err" &
g=$!
wait_recording "$TMPD/h.err"
t0=$(date +%s%N)
touch "$TMPD/a.go"
wait "$g"
is "-p -d 3s of a job that hangs: exit 0" "$?" 0
t1=$(date +%s%N)
is "the launch, then the sync, flagged unfinished and without a return value" \
	"$(calls_of "$TMPD/h.json" "$a")" '[["cuLaunchKernel", false, false], ["cuCtxSynchronize", true, false]]'
dur=$(json_query "$TMPD/h.json" "[e['dur'] for e in ev if e.get('args', {}).get('unfinished')][0]")
span=$(( (t1 - t0) / 1000 ))
cmp_ok "its slice runs to the recording's end: ${dur} us, more than 1 s" "${dur%.*}" -gt 1000000
cmp_ok "  and less than from its start to record's exit (${span} us)" "${dur%.*}" -lt "$span"
is "no slice of the trace ends after the sync's" "$(json_query "$TMPD/h.json" \
	"max(e['ts'] + e['dur'] for e in ev if e.get('ph') == 'X') - [e['ts'] + e['dur']
	 for e in ev if e.get('args', {}).get('unfinished')][0] < 0.01")" true
like "its stack: the line that waits" "$(json_query "$TMPD/h.json" \
	"[e['args']['stack'] for e in ev if e.get('args', {}).get('unfinished')][0]")" \
	"main \\(.*hang_sync.py:$line\\)"
perfetto_ok "$TMPD/h.json"
rep=$("$GPUBPF" report "$TMPD/h.json")
like "report: the process is said to be still in the sync, at its line" "$rep" \
	"still in a driver call when the recording stopped.*
    cuCtxSynchronize on thread $a since \+[0-9.]* ms, [0-9.]* ms so far, from main \(.*hang_sync.py:$line\)"
"$GPUBPF" report --format json -o "$TMPD/r.json" "$TMPD/h.json"
is "report JSON: that call, its thread and site" "$(json_query "$TMPD/r.json" \
	"[(u['name'], u['thread'], u['site'].endswith('hang_sync.py:$line'), u['so_far_ms'] > 1000)
	  for p in d['processes'] for u in p['unfinished_calls']]")" \
	"[[\"cuCtxSynchronize\", $a, true, true]]"
check "convert to .pftrace" "$GPUBPF" convert "$TMPD/h.json" "$TMPD/h.pftrace"
check "and back" "$GPUBPF" convert "$TMPD/h.pftrace" "$TMPD/back.json"
is "the sync still unfinished, its slice the same, through .pftrace" "$(json_query "$TMPD/back.json" \
	"[(e['name'], e['dur']) for e in ev if e.get('args', {}).get('unfinished')]")" \
	"$(json_query "$TMPD/h.json" "[(e['name'], e['dur']) for e in ev if e.get('args', {}).get('unfinished')]")"

# two jobs hang; one is killed in its sync, the recording goes on: its
# slice ends as it died, the other's as the recording does
start a
start b
a=$(cat "$TMPD/a") b=$(cat "$TMPD/b")
"$GPUBPF" record -p "$a,$b" -d 4s -o "$TMPD/k.json" 2>"$TMPD/k.err" &
g=$!
wait_recording "$TMPD/k.err"
touch "$TMPD/a.go" "$TMPD/b.go"
sleep 1
kill -9 "$a"
wait "$g"
is "-p of two, one killed in its sync: exit 0" "$?" 0
is "the killed one's sync: unfinished" "$(calls_of "$TMPD/k.json" "$a")" \
	'[["cuLaunchKernel", false, false], ["cuCtxSynchronize", true, false]]'
is "the other's: unfinished" "$(calls_of "$TMPD/k.json" "$b")" \
	'[["cuLaunchKernel", false, false], ["cuCtxSynchronize", true, false]]'
gap=$(json_query "$TMPD/k.json" "round((max(e['ts'] + e['dur'] for e in ev if e.get('cat') == 'cuda_api'
	and e['pid'] == $b) - max(e['ts'] + e['dur'] for e in ev if e.get('cat') == 'cuda_api'
	and e['pid'] == $a)) / 1e3)")
cmp_ok "the killed one's ends as it died, 1 s or more before the other's ($gap ms)" "$gap" -gt 1000
perfetto_ok "$TMPD/k.json"

mapfile -t pythons < <(cpythons 3.8 3.10 3.11 3.13)
for py in "${pythons[@]:-$PY}"; do
	name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
	start a "$py"
	a=$(cat "$TMPD/a")
	touch "$TMPD/a.go"
	wait_for_file "$TMPD/a.hangs" 20
	sleep 0.5       # in its sync before the recording
	if check "$name: -p -d 2s of a job hung before it" "$GPUBPF" record -p "$a" -d 2s \
		-o "$TMPD/w.json"; then
		is "$name: no call in the trace" "$(calls_of "$TMPD/w.json" "$a")" "[]"
		is "$name: the waiting thread's state, all along, in its stack" "$(json_query "$TMPD/w.json" \
			"[e['dur'] > 1.5e6 for e in ev if e.get('cat') == 'thread_state' and e['pid'] == $a
			  and any(f.startswith('main (') and f.endswith('hang_sync.py:$line)')
				  for f in e['args'].get('stack', []))]")" "[true]"
		is "$name: the sleeping thread's, in its own" "$(json_query "$TMPD/w.json" \
			"[e['dur'] > 1.5e6 for e in ev if e.get('cat') == 'thread_state'
			  and e['pid'] == $a and e['args'].get('stack', [''])[0].startswith('sleeper (')
			  and e['args']['stack'][0].endswith('hang_sync.py:$sline)')]")" "[true]"
		rep=$("$GPUBPF" report "$TMPD/w.json")
		like "$name: report: the process made no call; the waiting thread at its line" "$rep" \
			"no driver call or GPU work in the recording .*
 +$a +[0-9.]+ +[0-9.]+ +[0-9.]+  [a-z_]+ +main \(.*hang_sync.py:$line\)"
		like "$name: report: the sleeping one at its" "$rep" \
			" +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  [a-z_]+ +sleeper \(.*hang_sync.py:$sline\)"
		perfetto_ok "$TMPD/w.json"
	fi
	kill -9 "$a"
done
done_testing
