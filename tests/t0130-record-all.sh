#!/usr/bin/env bash
# record -a: every CUDA process on the machine, those running when the
# recording starts and those started during it.
. "$(dirname "$0")/lib.sh"
test_description "record -a"
require_bpf
require_sim
probed=$(probed_list)
export LD_LIBRARY_PATH="$SIMLIB"
train=("$PY" "$GPUBPF_ROOT/sim/train.py" --steps 4 --no-thread)

# one process already running (libcuda loaded, waiting), one started later
"${train[@]}" --wait-file "$TMPD/go" --truth "$TMPD/a.json" 2>/dev/null &
wa=$!
wait_for_cmd 20 grep -q libcuda "/proc/$wa/maps"
"$GPUBPF" record -a -o "$TMPD/all.json" 2>"$TMPD/g.err" &
g=$!
wait_recording "$TMPD/g.err"
"${train[@]}" --truth "$TMPD/b.json" 2>/dev/null &
wb=$!
touch "$TMPD/go"
wait "$wa" "$wb"
kill -INT "$g"
wait "$g"
is "record -a stopped by SIGINT: exit 0" "$?" 0
like "it says it records every CUDA process" "$(cat "$TMPD/g.err")" "recording every CUDA process"
pid_b=$(json_query "$TMPD/b.json" 'd[0]["pid"]')
is "both processes are in the trace" "$(json_query "$TMPD/all.json" \
	"sorted({e['pid'] for e in ev if e.get('cat') == 'cuda_api' and e['pid'] in ($wa, $pid_b)})")" \
	"$(printf '[%s]' "$(printf '%s\n' "$wa" "$pid_b" | sort -n | paste -sd, | sed 's/,/, /')")"
# the started-later process is complete from its first call
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --pid "$pid_b" "$TMPD/all.json" "$TMPD/b.json" "$probed"
is "the waiting process's loop calls are all there" "$(json_query "$TMPD/all.json" \
	"len([e for e in ev if e.get('pid') == $wa and e.get('name') == 'cuLaunchKernelEx'])")" 4
is "no event lost" "$(json_query "$TMPD/all.json" 'd["gpubpf"]["dropped_total"]')" 0
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/all.json"
done_testing
