#!/usr/bin/env bash
# record -a walks the Python stacks of every CUDA process, as -p and -- CMD
# do: one running when the recording starts and one started during it, the
# latter from its very first call.
. "$(dirname "$0")/lib.sh"
test_description "record -a: Python stacks"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"

# one process already running (libcuda loaded, waiting)
"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 4 --no-thread --wait-file "$TMPD/go" 2>/dev/null &
wa=$!
at_exit "kill $wa 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$wa/maps"
"$GPUBPF" record -q -a -o "$TMPD/all.json" 2>"$TMPD/g.err" &
g=$!
at_exit "kill $g 2>/dev/null"
wait_recording "$TMPD/g.err"
# one started during the recording: stacks through methods, generators,
# threads..., compared with the workload's own
check "a Python workload started during the recording runs" \
	"$PY" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" --deep 100
touch "$TMPD/go"
wait "$wa"
kill -INT "$g"
wait "$g"
is "record -a exits 0" "$?" 0
is "no call came before its process's Python was found" "$(grep -c 'came before' "$TMPD/g.err")" 0
tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/all.json" "$TMPD/truth.json" 64
is "the running process: every launch carries its stack" "$(json_query "$TMPD/all.json" \
	"len([e for e in ev if e.get('pid') == $wa and e.get('name', '').startswith('cuLaunchKernel') and 'stack' not in e['args']])")" 0
is "the running process: launches from the layers come through Driver.launch" "$(json_query "$TMPD/all.json" "
sorted({' < '.join(f.split(' (')[0] for f in e['args']['stack'][:3]) for e in ev
        if e.get('pid') == $wa and e.get('name', '').startswith('cuLaunchKernel') and
        'Linear.forward' in str(e['args']['stack'][2:3])})")" \
	'["Driver.call < Driver.launch < Linear.forward"]'
cmp_ok "the running process made launches" "$(json_query "$TMPD/all.json" \
	"len([e for e in ev if e.get('pid') == $wa and e.get('name', '').startswith('cuLaunchKernel')])")" -gt 0
# forks of a process running before the recording map nothing: each is
# looked for at its first call (cuInit), 0.3 s before its syncs.  The scan
# of all processes, at most once a second, cannot have found both forks,
# 0.5 s apart, in time: before, the look at a first call missed every call
# but a launch (records are sized to their call), and one fork's first
# syncs had no stack
"$PY" "$GPUBPF_ROOT/tests/py/fork_calls.py" "$TMPD/fgo" 2 5 >"$TMPD/forks" &
wf=$!
at_exit "kill $wf 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$wf/maps"
"$GPUBPF" record -q -a -o "$TMPD/forks.json" 2>"$TMPD/f.err" &
g=$!
wait_recording "$TMPD/f.err"
touch "$TMPD/fgo"
wait "$wf"
is "the forking process exits 0" "$?" 0
kill -INT "$g"
wait "$g"
is "record -a exits 0 (forks)" "$?" 0
line=$(grep -n "# THE CHILD'S CALL" "$GPUBPF_ROOT/tests/py/fork_at_pid.py" | cut -d: -f1)
want="\"child ($GPUBPF_ROOT/tests/py/fork_at_pid.py:$line)\""
is "each fork's 5 syncs have its stack from the first" "$(json_query "$TMPD/forks.json" "
[[str(e['args'].get('stack', [None])[0]) for e in sorted(ev, key=lambda e: e.get('ts', 0))
  if e.get('pid') == p and e.get('name') == 'cuCtxSynchronize']
 for p in [int(x) for x in open('$TMPD/forks').read().split()]]")" \
	"[[$want, $want, $want, $want, $want], [$want, $want, $want, $want, $want]]" ||
	diag <"$TMPD/f.err"
# each fork's cuInit, unless a scan found the fork first
is "the summary counts the forks' calls made before their Python was found" \
	"$(grep 'came before' "$TMPD/f.err")" "$(late_calls_line "$TMPD/forks.json" $(cat "$TMPD/forks"))"
# forked workers that call at once and end, under -a: their stacks from
# their first call too
"$GPUBPF" record -q -a -o "$TMPD/workers.json" 2>"$TMPD/w.err" &
g=$!
wait_recording "$TMPD/w.err"
check "forked workers run" "$PY" "$GPUBPF_ROOT/tests/py/fork_workers.py" 4 5
kill -INT "$g"
wait "$g"
is "record -a exits 0 (workers)" "$?" 0
fork_workers_ok "-a" "$TMPD/workers.json" "$TMPD/w.err" 4 5
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/all.json"
perfetto_ok "$TMPD/forks.json"
done_testing
