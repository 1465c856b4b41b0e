#!/usr/bin/env bash
# A signal that ends `record -- CMD` reaches the command once, as it would
# without gpubpf.  Sent to gpubpf alone, gpubpf passes it on; sent to its
# whole process group (a terminal's Ctrl-C or hangup, kill -PGID,
# timeout(1)), the command has it already and is not sent it again: before,
# a program that counts its SIGTERMs got two under timeout(1), and without
# a terminal two SIGINTs from a group's Ctrl-C.  Each time the trace is
# written, with the command's call, once the command has ended: one
# sender's signal to gpubpf and then to its group (timeout(1)) counts as
# one, not as the second signal that stops gpubpf at once.
. "$(dirname "$0")/lib.sh"
test_description "record -- CMD: a signal that ends the recording reaches the command once"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
job=("$PY" "$GPUBPF_ROOT/tests/py/count_signals.py" "$TMPD/ready")

# got ID DESC SIGNAL STATUS: what the job printed, gpubpf's exit status
# (STATUS) and the trace of recording ID
got() {
	is "$2: gpubpf's exit status" "$rc" "$4"
	is "$2: the command got SIG$3 once" "$(cat "$TMPD/$1.out")" "SIG$3"
	is "$2: the trace has the command's call" "$(json_query "$TMPD/$1.json" \
		"len([e for e in ev if e.get('name') == 'cuInit'])")" 1
}

# sig ID DESC SIGNAL TARGETS [PAUSE]: record the job (gpubpf in a session
# of its own: its process group is its pid, the job's too), then send
# SIGNAL to each of TARGETS (PID: gpubpf alone; -PID: its process group),
# PAUSE seconds apart, once the job is ready
sig() {
	local g t
	rm -f "$TMPD/ready"
	setsid "$GPUBPF" record -q -o "$TMPD/$1.json" -- "${job[@]}" >"$TMPD/$1.out" \
		2>"$TMPD/$1.err" &
	g=$!
	at_exit "kill -9 $g 2>/dev/null"
	wait_for_cmd 30 test -e "$TMPD/ready"
	for t in $4; do
		kill -"$3" -- "${t/PID/$g}"
		[[ -z $5 ]] || sleep "$5"
	done
	rc=0
	wait "$g" || rc=$?
	got "$1" "$2" "$3" 0
}

sig term "SIGTERM to gpubpf" TERM PID
sig gterm "SIGTERM to its process group" TERM -PID
sig int "SIGINT to gpubpf" INT PID
sig gint "SIGINT to its process group (a terminal's Ctrl-C)" INT -PID
sig hup "SIGHUP to gpubpf" HUP PID
sig ghup "SIGHUP to its process group (a terminal hung up)" HUP -PID
# to gpubpf, then at once to the group, as timeout(1) does: one stop, not
# the second signal that leaves the command untraced (gpubpf waits for it;
# it did not, in one CI run of the timeout case below)
sig both "SIGTERM to gpubpf, then its group" TERM "PID -PID"
# so one process's second SIGTERM to gpubpf within the second (0.3 s)
sig twice "SIGTERM to gpubpf twice from one process" TERM "PID PID" 0.3

# timeout(1) sends SIGTERM to gpubpf, then to its own process group; its
# time is up once the job is ready (it takes SIGALRM for its timer's)
rm -f "$TMPD/ready"
timeout -s TERM 120 "$GPUBPF" record -q -o "$TMPD/to.json" -- "${job[@]}" >"$TMPD/to.out" \
	2>"$TMPD/to.err" &
to=$!
at_exit "kill $to 2>/dev/null"
wait_for_cmd 30 test -e "$TMPD/ready"
kill -ALRM "$to"
rc=0
wait "$to" || rc=$?
got to "timeout -s TERM" TERM 124

# -d shorter than the command: the recording ends, gpubpf waits for the
# command and exits with its status, as without -d (it exited 0)
for c in "exit 3:3" "kill -SEGV \$\$:139"; do
	rc=0
	"$GPUBPF" record -q -d 300ms -o "$TMPD/d.json" -- sh -c "sleep 1.5; ${c%%:*}" || rc=$?
	is "-d 300ms, then the command's '${c%%:*}': gpubpf exits ${c##*:}" "$rc" "${c##*:}"
done
# a second signal leaves the command running untraced, and says so
"$GPUBPF" record -q -o "$TMPD/u.json" -- sh -c 'trap "" TERM INT; sleep 3' 2>"$TMPD/u.err" &
g=$!
at_exit "kill -9 $g 2>/dev/null"
wait_for_cmd 30 pgrep -P "$g" -x sh
sleep 0.5
kill -TERM "$g"
sleep 1.2
kill -INT "$g"
wait "$g"
like "a second signal: the command runs on, said" "$(cat "$TMPD/u.err")" \
	"gpubpf: the command \(pid [0-9]+\) runs on, untraced; its exit status is not gpubpf's"
done_testing
