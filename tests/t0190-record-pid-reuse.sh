#!/usr/bin/env bash
# A process given the pid of one that ended earlier in the same recording
# (the kernel hands pids out again after pid_max more processes) is
# another process: its own track, its GPU work linked to its own calls
# (correlation ids restart at 1 in each process), its own threads and
# kernel names.  tests/py/fork_at_pid.py makes the kernel give the pid
# again at once (ns_last_pid).
. "$(dirname "$0")/lib.sh"
test_description "record: a second process at an ended one's pid"
require_bpf
require_sim
require_file "$SIMINJ" "$TESTBIN/cudacalls"
probed=$(probed_list)
export LD_LIBRARY_PATH="$SIMLIB"
unset GPUBPF_INJECTION_LIB

# train.py, 4 steps; once it ended, train.py again at its pid, 6 steps,
# under one recording (-- CMD: the command and its children)
job='"$1" "$2" --steps 4 --no-thread --truth "$3/a.json" & p=$!; wait $p
exec "$1" "$4" $p -- "$1" "$2" --steps 6 --no-thread --truth "$3/b.json"'
for try in 1 2 3; do
	rc=0
	"$GPUBPF" record -q -o "$TMPD/t.json" -o "$TMPD/t.pftrace" -- bash -c "$job" sh "$PY" \
		"$GPUBPF_ROOT/sim/train.py" "$TMPD" "$GPUBPF_ROOT/tests/py/fork_at_pid.py" \
		2>"$TMPD/err" || rc=$?
	((rc == 3)) || break    # another process took the pid first
done
is "recorded" "$rc" 0
p=$(json_query "$TMPD/a.json" 'd[0]["pid"]')
is "the second job had the first's pid" "$(json_query "$TMPD/b.json" 'd[0]["pid"]')" "$p"
again=$((p + 4194304))
is "two processes: the pid, and the pid + 2^22 for the second" "$(json_query "$TMPD/t.json" \
	'sorted({e["pid"] for e in ev if e.get("cat") == "cuda_api"})')" "[$p, $again]"
first=$(json_query "$TMPD/t.json" \
	"next(e['args']['name'] for e in ev if e.get('name') == 'process_name' and e['pid'] == $p)")
is "the second's name says whose pid it has" "$(json_query "$TMPD/t.json" \
	"next(e['args']['name'] for e in ev if e.get('name') == 'process_name' and e['pid'] == $again)")" \
	"$first (pid $p #2)"
is "each has its main thread, of tid the pid, named" "$(json_query "$TMPD/t.json" \
	"sorted(e['pid'] for e in ev if e.get('name') == 'thread_name' and e['tid'] == $p)")" "[$p, $again]"
# each process's calls exactly those it made, with their arguments
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --pid "$p" "$TMPD/t.json" "$TMPD/a.json" "$probed"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --pid "$p" --trace-pid "$again" \
	"$TMPD/t.json" "$TMPD/b.json" "$probed"
# each kernel linked to the launch that made it, in its own process
"$PY" -c 'import json, sys; json.dump(sum((json.load(open(f)) for f in sys.argv[2:]), []), open(sys.argv[1], "w"))' \
	"$TMPD/ab.json" "$TMPD/a.json" "$TMPD/b.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/t.json" "$TMPD/ab.json"
launches='len([c for c in json.load(open("%s")) if c["name"].startswith("cuLaunch") and c["ret"] == 0])'
for x in "a $p" "b $again"; do
	set -- $x
	is "process $2: as many kernels as its job launched, each linked to one of its calls" \
		"$(json_query "$TMPD/t.json" "len([w for w in ev if w.get('cat') == 'kernel' and w['pid'] == $2
		and any(h.get('cat') == 'cuda_api' and h['pid'] == $2 and h['args'].get('correlation') == w['args']['correlation'] for h in ev)])")" \
		"$(json_query "$TMPD/t.json" "$(printf "$launches" "$TMPD/$1.json")")"
done
# as Perfetto's importer reads them: flows within each process
perfetto_ok "$TMPD/t.json"
perfetto_ok "$TMPD/t.pftrace"
# a C program first (its threads' states come before its calls, which
# named neither them nor the process: the model knew no such process at
# its exit, did not count it, and took the second for it), then another at
# its pid: two processes, each with its calls exact
cjob='"$1" "$2" "$3/ca.json" >/dev/null & p=$!; wait $p
exec "$4" "$5" $p -- "$1" "$2" "$3/cb.json" >/dev/null'
for try in 1 2 3; do
	rc=0
	"$GPUBPF" record -q -o "$TMPD/c.json" -- bash -c "$cjob" sh "$TESTBIN/cudacalls" \
		"$SIMLIB/libcuda.so.1" "$TMPD" "$PY" "$GPUBPF_ROOT/tests/py/fork_at_pid.py" \
		2>"$TMPD/cerr" || rc=$?
	((rc == 3)) || break    # another process took the pid first
done
is "C program first: recorded" "$rc" 0
cp=$(json_query "$TMPD/ca.json" 'd["pid"]')
is "C program first: the second had its pid" "$(json_query "$TMPD/cb.json" 'd["pid"]')" "$cp"
is "C program first: two processes" "$(json_query "$TMPD/c.json" \
	'sorted({e["pid"] for e in ev if e.get("cat") == "cuda_api"})')" "[$cp, $((cp + 4194304))]"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --pid "$cp" "$TMPD/c.json" "$TMPD/ca.json" "$probed"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --pid "$cp" --trace-pid "$((cp + 4194304))" \
	"$TMPD/c.json" "$TMPD/cb.json" "$probed"
# the report: two processes, the second by its name
"$GPUBPF" report "$TMPD/t.json" >"$TMPD/r.txt"
is "the report has both" "$(grep -c "^process " "$TMPD/r.txt")" 2
nb=$("$PY" -c 'import json, sys; probed = {l.split()[0] for l in open(sys.argv[2]) if l.strip()}
print(len([c for c in json.load(open(sys.argv[1])) if c["name"] in probed]))' "$TMPD/b.json" "$probed")
is "the second under its own name, with its own calls" \
	"$(grep "^process $again " "$TMPD/r.txt" | cut -d, -f1)" "process $again ($first (pid $p #2)): $nb host calls"
done_testing
