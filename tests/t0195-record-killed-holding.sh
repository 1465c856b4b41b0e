#!/usr/bin/env bash
# gpubpf killed (SIGKILL, the OOM killer) while its programs hold a process
# stopped (at its libcuda mapping, here): its keeper, a process forked as
# the recording starts, continues it once gpubpf is gone, and the process
# runs to its end.  A recording that ends normally ends and reaps its
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

# loads libcuda (the held moment) once told to, and makes a call
"$PY" "$GPUBPF_ROOT/tests/py/load_later.py" "$TMPD/go" libcuda.so.1 >"$TMPD/t.out" 2>&1 &
t=$!
at_exit "kill -CONT $t 2>/dev/null; kill $t 2>/dev/null"
"$GPUBPF" record -a -o "$TMPD/k.json" 2>"$TMPD/g.err" &
g=$!
at_exit "kill -9 $g 2>/dev/null"
wait_recording "$TMPD/g.err"
is "a keeper runs beside the recording" "$(keepers_of "$g" | wc -l)" 1
keeper=$(keepers_of "$g")
# gpubpf stopped, its heartbeat still fresh: the process is held and
# nobody lets it go, until gpubpf is killed
kill -STOP "$g"
touch "$TMPD/go"
wait_for_cmd 5 test "$(state "$t")" = T
is "the process is held at its libcuda mapping" "$(state "$t")" T
kill -9 "$g"
wait "$g" 2>/dev/null
wait_for_cmd 20 test "$(state "$t")" != T
isnt "gpubpf killed: the process is continued" "$(state "$t")" T
wait "$t"
is "it ran to its end" "$?:$(cat "$TMPD/t.out")" "0:cuInit 0"
wait_for_cmd 10 test ! -e "/proc/$keeper/status" -o "$(state "$keeper")" = Z
ok "the keeper is gone" test ! -e "/proc/$keeper/status" -o "$(state "$keeper")" = Z

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
