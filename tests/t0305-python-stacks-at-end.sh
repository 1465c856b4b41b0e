#!/usr/bin/env bash
# A process whose stacks are walked is held as it ends (its interpreter's
# Py_FinalizeEx, libc's _exit and execve) until the stacks it sent are named from its
# memory: the last calls of a process that ends at once after them
# (os._exit, as a multiprocessing worker ends) keep their frames' names,
# where they read "?" before (tests/py/quick_end.py: 3 to 7 runs in 10 on
# CPython 3.11 and 3.12).  Under -- CMD on every CPython found, a fork
# followed under -- CMD, and -p.  The process then ends as it would have.
. "$(dirname "$0")/lib.sh"
test_description "Python stacks of a process that ends right after its calls"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
W="$GPUBPF_ROOT/tests/py/quick_end.py"

# the top frames the five last calls must have, as json_query prints them
want='['
for k in 0 1 2 3 4; do
	want+="\"last$k ($W:$(grep -n "# LAST $k\$" "$W" | cut -d: -f1))\""
	((k < 4)) && want+=', '
done
want+=']'

# last_named NAME TRACE ERR [PID]: the five syncs (of PID) named, none "?"
last_named() {
	local sel=${4:+" and e.get('pid') == $4"}
	is "$1: the last calls have their frames named" "$(json_query "$2" \
		"[e['args'].get('stack', ['-'])[0] for e in ev if e.get('name') == 'cuCtxSynchronize'$sel]")" \
		"$want"
	is "$1: no frame read \"?\"" "$(grep -c 'could not be named' "$3")" 0
}

found=0
for v in 3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15; do
	py=$(cpythons $v | head -1)
	[[ -n "$py" ]] || continue
	found=1
	for mode in exit finalize exec; do
		name="$v ($py), $mode"
		rc=0
		"$GPUBPF" record -v -o "$TMPD/$v-$mode.json" -- "$py" "$W" $mode >/dev/null \
			2>"$TMPD/$v-$mode.err" || rc=$?
		is "$name: the process's exit status" "$rc" \
			"$(case $mode in exit) echo 7 ;; exec) echo 5 ;; *) echo 0 ;; esac)"
		last_named "$name" "$TMPD/$v-$mode.json" "$TMPD/$v-$mode.err"
		# os._exit: held at _exit; os.execv: at execve (its frames were
		# "?" one run in two); the end of the script: at Py_FinalizeEx,
		# then _exit
		is "$name: held as it ends, where it ends" \
			"$(grep -c '^gpubpf: pid [0-9]* held as it ends' "$TMPD/$v-$mode.err")" \
			"$([[ $mode = finalize ]] && echo 2 || echo 1)" ||
			diag "$(grep '^gpubpf: ' "$TMPD/$v-$mode.err")"
	done
done
((found)) || skip "no CPython 3.6 to 3.15 found" 12

# a fork under -- CMD, found at its first call, held at its os._exit
rc=0
"$GPUBPF" record -v -o "$TMPD/worker.json" -- "$PY" "$W" worker >/dev/null 2>"$TMPD/worker.err" || rc=$?
is "a fork: its exit status, through its parent" "$rc" 7
child=$(json_query "$TMPD/worker.json" \
	"[e['pid'] for e in ev if e.get('name') == 'cuCtxSynchronize'][0]")
last_named "a fork" "$TMPD/worker.json" "$TMPD/worker.err" "$child"
like "a fork: held as it ends" "$(cat "$TMPD/worker.err")" "pid $child held as it ends"

# -p: the hooks attached for that process alone
"$PY" "$W" exit "$TMPD/go" &
p=$!
at_exit "kill $p 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$p/maps"
"$GPUBPF" record -v -p "$p" -o "$TMPD/pid.json" >/dev/null 2>"$TMPD/pid.err" &
g=$!
at_exit "kill $g 2>/dev/null"
wait_recording "$TMPD/pid.err"
touch "$TMPD/go"
wait "$p"
is "-p: the process's exit status" "$?" 7
wait "$g"
is "-p: record ends with the process, exit 0" "$?" 0
last_named "-p" "$TMPD/pid.json" "$TMPD/pid.err"
like "-p: held as it ends" "$(cat "$TMPD/pid.err")" "pid $p held as it ends"
perfetto_ok "$TMPD/pid.json"
done_testing
