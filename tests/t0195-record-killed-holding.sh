#!/usr/bin/env bash
# gpubpf killed (SIGKILL, the OOM killer) while its programs hold a process
# stopped (at its libcuda mapping, here): its keeper, a process forked as
# the recording starts, continues it once gpubpf is gone, and the process
# runs to its end; so when gpubpf's whole process group is killed (the
# keeper leaves it).  A recording that ends normally ends and reaps its
# keeper.
. "$(dirname "$0")/lib.sh"
test_description "record killed while holding a process: the process goes on"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"

state() { sed -n 's/^State:\t\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
keepers_of() { # PID: the keepers whose parent is PID
	local k
	for k in $(pgrep -x gpubpf-keeper); do
		[[ $(sed -n 's/^PPid:\t//p' "/proc/$k/status" 2>/dev/null) == "$1" ]] && echo "$k"
	done
}

# killed NAME SIGNAL-TARGET: a job held at its libcuda mapping by a
# recording (in a session of its own, so that its process group is its
# pid), gpubpf stopped (its heartbeat still fresh: nobody lets the job go),
# then SIGKILLed as TARGET says (its pid, or its whole process group, as
# timeout(1) -s KILL kills): the keeper continues the job
killed() {
	local name=$1 target=$2 t g keeper
	rm -f "$TMPD/go"
	# loads libcuda (the held moment) once told to, and makes a call
	"$PY" "$GPUBPF_ROOT/tests/py/load_later.py" "$TMPD/go" libcuda.so.1 >"$TMPD/t.out" 2>&1 &
	t=$!
	at_exit "kill -CONT $t 2>/dev/null; kill $t 2>/dev/null"
	setsid "$GPUBPF" record -a -o "$TMPD/k.json" 2>"$TMPD/g.err" &
	g=$!
	at_exit "kill -9 $g 2>/dev/null"
	wait_recording "$TMPD/g.err"
	is "$name: a keeper runs beside the recording" "$(keepers_of "$g" | wc -l)" 1
	keeper=$(keepers_of "$g")
	kill -STOP "$g"
	touch "$TMPD/go"
	wait_for_cmd 5 test "$(state "$t")" = T
	is "$name: the process is held at its libcuda mapping" "$(state "$t")" T
	kill -9 -- "${target/PID/$g}"
	wait "$g" 2>/dev/null
	wait_for_cmd 20 test "$(state "$t")" != T
	isnt "$name: the process is continued" "$(state "$t")" T
	wait "$t"
	is "$name: it ran to its end" "$?:$(cat "$TMPD/t.out")" "0:cuInit 0"
	wait_for_cmd 10 test ! -e "/proc/$keeper/status" -o "$(state "$keeper")" = Z
	ok "$name: the keeper is gone" test ! -e "/proc/$keeper/status" -o "$(state "$keeper")" = Z
}

killed "gpubpf killed" PID
# the whole group: the keeper, in a session of its own, is not in it
killed "its process group killed" -PID

# a recording that ends normally leaves no keeper
"$GPUBPF" record -a -d 500ms -q -o "$TMPD/n.json" 2>"$TMPD/n.err" &
g=$!
wait_recording "$TMPD/n.err"
keeper=$(keepers_of "$g")
ok "a keeper ran beside it" test -n "$keeper"
wait "$g"
is "the recording ended: exit 0" "$?" 0
# ended and reaped by gpubpf itself, not left to an init that may not reap
ok "its keeper is gone with it, reaped" test ! -e "/proc/$keeper/status"
done_testing
