#!/usr/bin/env bash
# record -p: attach to running processes, before or after they load
# libcuda; stop when they exit, at -d, or at SIGINT or SIGHUP (not under
# nohup), always writing a valid trace; the traced program runs on unharmed.
. "$(dirname "$0")/lib.sh"
test_description "record -p PID"
require_bpf
require_sim
probed=$(probed_list)
export LD_LIBRARY_PATH="$SIMLIB"
train=("$PY" "$GPUBPF_ROOT/sim/train.py")
monotonic_ns() { "$PY" -c 'import time; print(time.monotonic_ns())'; }

# Keep the workload's calls made at or after time T (ns).
truth_since() { # TRUTH T OUT
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
json.dump([c for c in d if c["t0_ns"] >= int(sys.argv[2])], open(sys.argv[3], "w"))' "$@"
}

# 1. A process that has loaded libcuda and waits; everything after the go
# signal is captured, from both its threads (main, the data loader's).
# Then the same with a link per entry point, as on a kernel whose
# uprobe_multi links are missing or see a pid's main thread only.
attached_waiting() { # NAME [ENV...]
	local n=$1 w g t_go
	shift
	"${train[@]}" --steps 6 --wait-file "$TMPD/go$n" --truth "$TMPD/t$n.json" \
		2>"$TMPD/w$n.err" &
	w=$!
	wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
	env "$@" "$GPUBPF" record -v -p "$w" -d 60s -o "$TMPD/p$n.json" 2>"$TMPD/g$n.err" &
	g=$!
	wait_recording "$TMPD/g$n.err"
	t_go=$(monotonic_ns)
	touch "$TMPD/go$n"
	wait "$w"
	is "$n: workload ran to its end" "$?" 0
	wait "$g"
	is "$n: record ends with the process, exit 0" "$?" 0
	like "$n: it says the process exited" "$(cat "$TMPD/g$n.err")" "pid $w exited"
	truth_since "$TMPD/t$n.json" "$t_go" "$TMPD/t$n.since.json"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --sim-syncs \
		"$TMPD/p$n.json" "$TMPD/t$n.since.json" "$probed"
	is "$n: calls of both threads" "$(json_query "$TMPD/p$n.json" \
		'len({e["tid"] for e in ev if e.get("cat") == "cuda_api"})')" 2
}
attached_waiting 1
attached_waiting 1l GPUBPF_TEST_NO_MULTI=1
like "1l: a link per entry point" "$(grep 'gpubpf: uprobes:' "$TMPD/g1l.err")" \
	"^gpubpf: uprobes: a link per entry point and return "

# 2. Attached before the process loads libcuda: waits for it, loses nothing.
# (gpubpf's setup takes 1.3-1.9 s on these VMs: at a 1.5 s pause, a clean
# clone's CI once found libcuda loaded already, and the job done)
"${train[@]}" --steps 3 --pause-before-cuda 4 --truth "$TMPD/t2.json" 2>"$TMPD/w2.err" &
w2=$!
"$GPUBPF" record -p "$w2" -o "$TMPD/p2.json" 2>"$TMPD/g2.err"
is "record -p before libcuda: exit 0" "$?" 0
like "it says it waits for libcuda" "$(cat "$TMPD/g2.err")" "pid $w2 has not loaded libcuda yet; waiting"
wait "$w2"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/p2.json" "$TMPD/t2.json" "$probed"
is "the lookups right after loading libcuda were captured" "$(json_query "$TMPD/p2.json" \
	'len([e for e in ev if e.get("name") == "cuModuleGetFunction"])')" 9

# 2b. -p A,B, B gone during gpubpf's set-up (it was there at the start):
# said, and A recorded (the whole recording ended: "no such process")
"${train[@]}" --steps 3 --pause-before-cuda 4 --truth "$TMPD/t2b.json" 2>/dev/null &
wa=$!
sleep 0.3 &
wb=$!
"$GPUBPF" record -p "$wa,$wb" -o "$TMPD/p2b.json" 2>"$TMPD/g2b.err"
is "-p A,B, B gone during the set-up: exit 0" "$?" 0
like "... B said to have exited" "$(cat "$TMPD/g2b.err")" "gpubpf: pid $wb exited before the recording began"
wait "$wa"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/p2b.json" "$TMPD/t2b.json" "$probed"
out=$TMPD/none      # expect_error: nothing written here
mkdir -p "$out"
expect_error "-p of a pid that is not there at the start" 1 "^gpubpf: no such process: $wb$" \
	"$GPUBPF" record -p "$wb" -o "$out/p.json"

# 3. -d stops the recording while the process runs on; SIGINT too.  Both
# traces are valid, and the workload finishes untouched.  It waits for
# hold3 once its steps are done, so it is still there when checked even
# where writing the traces takes longer than its steps; 1000 steps (~9 s
# alone) still run while the second recording starts on a loaded machine
# (at 400, a run beside three CPU hogs had none left by then).
"${train[@]}" --steps 1000 --hold-file "$TMPD/hold3" --truth "$TMPD/t3.json" 2>"$TMPD/w3.err" &
w3=$!
wait_for_cmd 20 grep -q libcuda "/proc/$w3/maps"
start=$(date +%s%N)
"$GPUBPF" record -p "$w3" -d 700ms -o "$TMPD/p3.json" 2>"$TMPD/g3.err"
is "record -d 700ms: exit 0" "$?" 0
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
# (without -d it would wait for the held job: the bound leaves room for a
# loaded machine's attach and export)
cmp_ok "it stopped after about 700 ms (took $elapsed_ms ms)" "$elapsed_ms" -lt 8000
cmp_ok "events were captured" "$(json_query "$TMPD/p3.json" 'd["gpubpf"]["events"]')" -gt 0
# a thread's id (from top -H, a log line) stands for its process, named
# once however often it is given
tid3=$(ls "/proc/$w3/task" | grep -vx "$w3" | head -n 1)
"$GPUBPF" record -p "$tid3,$w3" -d 700ms -o "$TMPD/p5.json" 2>"$TMPD/g5.err"
is "record -p THREAD,PID: exit 0" "$?" 0
like "it says it records the thread's process" "$(cat "$TMPD/g5.err")" \
	"$tid3 is a thread of process $w3 \\([^)]*\\): recording that process"
is "the trace holds that one process, with its calls" "$(json_query "$TMPD/p5.json" \
	'sorted({e["pid"] for e in ev if e.get("cat") == "cuda_api"})')" "[$w3]"
# stopped_by SIG PID NAME: record -p PID, stopped by SIG once it records:
# exit 0, its trace NAME.json with the calls made meanwhile
stopped_by() {
	local g
	"$GPUBPF" record -p "$2" -o "$TMPD/$3.json" 2>"$TMPD/$3.err" &
	g=$!
	wait_recording "$TMPD/$3.err"
	sleep 0.5
	kill -"$1" "$g"
	wait "$g"
	is "record stopped by SIG$1: exit 0" "$?" 0
	cmp_ok "the trace of a SIG$1 holds events" "$(json_query "$TMPD/$3.json" \
		'len([e for e in ev if e.get("cat") == "cuda_api"])')" -gt 0
}
# on a job that launches throughout (w3's steps may all be done by now on
# a loaded machine: 3 runs in 4 beside a CPU hog had no call left)
"${train[@]}" --steps 100000 --no-thread >/dev/null 2>&1 &
w6=$!
at_exit "kill $w6 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w6/maps"
stopped_by INT "$w6" p4
# a terminal that goes away (ssh dropped): SIGHUP stops it as SIGINT does;
# under nohup it records on, to -d
stopped_by HUP "$w6" p6
nohup "$GPUBPF" record -p "$w6" -d 2500ms -o "$TMPD/p7.json" >/dev/null 2>"$TMPD/g7.err" &
g7=$!
wait_recording "$TMPD/g7.err"
kill -HUP "$g7"
sleep 0.5
ok "under nohup, SIGHUP does not stop it" kill -0 "$g7"
wait "$g7"
is "under nohup, it stopped at -d: exit 0" "$?" 0
ok "the job recorded through both still runs" kill -0 "$w6"
kill "$w6"
ok "the process was still running when recording stopped" kill -0 "$w3"
touch "$TMPD/hold3"
wait "$w3"
is "the workload finished normally after being traced twice" "$?" 0
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/p1.json"
perfetto_ok "$TMPD/p3.json"
done_testing
