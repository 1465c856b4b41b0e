#!/usr/bin/env bash
# record -- CMD follows the processes CMD forks and execs (launchers,
# workers, data loaders): each one's calls, complete.  A process that is
# neither CMD nor its descendant is not traced.
. "$(dirname "$0")/lib.sh"
test_description "record -- CMD follows forks and execs"
require_bpf
require_sim
probed=$(probed_list)
export LD_LIBRARY_PATH="$SIMLIB"

# a bystander CUDA process that must stay out of the trace
"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 2 --no-thread --wait-file "$TMPD/go" 2>/dev/null &
bystander=$!
wait_for_cmd 20 grep -q libcuda "/proc/$bystander/maps"

# the command is a shell that runs the workload, which forks and execs
check "record exits 0" "$GPUBPF" record -o "$TMPD/kids.json" -- \
	sh -c "touch '$TMPD/go'; exec '$PY' '$GPUBPF_ROOT/sim/train.py' --steps 3 --fork-child --truth '$TMPD/truth.json'"
wait "$bystander"

truths=("$TMPD"/truth.json "$TMPD"/truth.json.child*)
is "three workload processes wrote their truth" "${#truths[@]}" 3
for t in "${truths[@]}"; do
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/kids.json" "$t" "$probed"
done
is "three processes in the trace" "$(json_query "$TMPD/kids.json" \
	'len({e["pid"] for e in ev if e.get("cat") == "cuda_api"})')" 3
is "the bystander is not traced" "$(json_query "$TMPD/kids.json" \
	"len([e for e in ev if e.get('pid') == $bystander])")" 0

# forked workers that call at once and end: walked with their parent's
# layout from their first call (none had a stack, and none was counted)
check "record forked workers" "$GPUBPF" record -q -o "$TMPD/workers.json" -- \
	"$PY" "$GPUBPF_ROOT/tests/py/fork_workers.py" 4 5
fork_workers_ok "-- CMD" "$TMPD/workers.json" "$TMPD/.check.out" 4 5
# the command exits while a CUDA process it started runs on: the recording
# ends with the command, as documented, and says so (it said nothing)
"$GPUBPF" record -q -o "$TMPD/left.json" -- sh -c "'$PY' '$GPUBPF_ROOT/sim/train.py' --steps 100000 \
--no-thread --until-file '$TMPD/left.stop' >/dev/null 2>&1 & echo \$! >'$TMPD/left.pid'; \
while ! grep -q libcuda /proc/\$!/maps; do sleep 0.05; done" 2>"$TMPD/left.err"
is "a CUDA child left running: record exits 0" "$?" 0
left=$(cat "$TMPD/left.pid")
at_exit "kill $left 2>/dev/null"
is "... and says so, naming it" "$(grep 'command exited' "$TMPD/left.err")" \
	"gpubpf: the command exited, but 1 CUDA process it started still runs (pid $left): their calls from now on are not recorded"
touch "$TMPD/left.stop"
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/kids.json"
done_testing
