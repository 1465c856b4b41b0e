#!/usr/bin/env bash
# Thread states and CPU samples: a thread that runs pure Python, waits for
# the GIL held by a busy thread, blocks reading a pipe, sleeps, and shares
# its CPU with a busy process spends most of each phase in the right state
# (tests/check_states.py), its GIL waits name the holder (on 3.7 to 3.10 too), its samples land
# in the busy function, each thread's states tile its time, and Perfetto
# imports the trace; the report puts the GPU idle time each phase causes
# (a kernel is launched after each) on the right state (tests/check_causes.py);
# each GIL wait is linked to its holder's state by a flow, in JSON and
# .pftrace (tests/check_gil_flows.py).  The same in a process that made a
# subinterpreter first.  200 threads, -p attach mid-run, --sample-hz 0 and
# --no-states work too.
. "$(dirname "$0")/lib.sh"
test_description "thread states and samples from the scheduler"
require_bpf
require_sim
require_cmd taskset
export LD_LIBRARY_PATH="$SIMLIB"
W="$GPUBPF_ROOT/tests/py/thread_states.py"

# the newest CPython here
py=$(cpythons 3.15 3.14 3.13 3.12 3.11 | head -1)
[[ -z "$py" && -x /usr/bin/python3.11 ]] && py=/usr/bin/python3.11
[[ -n "$py" ]] || skip_all "no CPython 3.11+ found"
diag "the newest CPython here: $py"

if check "phases: record" "$GPUBPF" record --quiet -o "$TMPD/s.json" -o "$TMPD/s.pftrace" -- \
	"$py" "$W" "$TMPD/truth.json"; then
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_states.py" "$TMPD/s.json" "$TMPD/truth.json"
	perfetto_ok "$TMPD/s.json"
	gil_flows_ok "$TMPD/s.json" "$TMPD/s.pftrace"
	check "phases: report" "$GPUBPF" report --format json -o "$TMPD/s.rep.json" "$TMPD/s.json" &&
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_causes.py" "$TMPD/s.rep.json" "$TMPD/truth.json"
	# each long wait of the main thread carries the Python line it blocked in
	rd=$(grep -n 'return os.read(fd, 1)' "$W" | cut -d: -f1)
	sl=$(grep -n 'time.sleep(seconds)' "$W" | cut -d: -f1)
	is "phases: the read and the sleep carry the lines they blocked in" \
		"$(json_query "$TMPD/s.json" '[m := json.load(open("'"$TMPD/truth.json"'"))["main"],
 sorted({(e["args"]["state"], e["args"].get("stack", ["none"])[0]) for e in ev
         if e.get("cat") == "thread_state" and e["tid"] == 0x20000000 + m and
         e["args"]["state"] in ("io", "sleep") and float(e["dur"]) > 100000})][-1]')" \
		"[[\"io\", \"blocking_read ($W:$rd)\"], [\"sleep\", \"sleeping ($W:$sl)\"]]"
	is "phases: the report puts those waits at those lines" \
		"$(json_query "$TMPD/s.rep.json" 'sorted({(c["cause"], c["site"]) for c in d["processes"][0]["devices"][0]["idle"]["host_bound_causes"] if c["cause"] in ("io", "sleep") and c["ms"] > 100})')" \
		"[[\"io\", \"blocking_read ($W:$rd)\"], [\"sleep\", \"sleeping ($W:$sl)\"]]"
fi

# the same phases in a process that made a subinterpreter first (CPython
# lists interpreters newest first; 3.12+ keep a GIL in each): the main
# interpreter's threads wait on its GIL, and their states say so
if check "phases, with a subinterpreter: record" "$GPUBPF" record --quiet -o "$TMPD/i.json" -- \
	"$py" "$GPUBPF_ROOT/tests/py/subinterp_first.py" "$W" "$TMPD/itruth.json"; then
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_states.py" "$TMPD/i.json" "$TMPD/itruth.json"
fi

# 3.7 to 3.10 keep no native thread id: their GIL holders are named by
# their pthread_self(), which BPF maps to tids as the threads run
while read -r old; do
	v=$("$old" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	check "CPython $v: record" "$GPUBPF" record --quiet -o "$TMPD/o.json" \
		-o "$TMPD/o.pftrace" -- "$old" "$W" "$TMPD/otruth.json" --phase-s 0.3 || continue
	json_query "$TMPD/o.json" 'sum(e["dur"] for e in ev if e.get("cat") == "thread_state" and e["args"]["state"] == "gil_wait")' >"$TMPD/gil"
	cmp_ok "CPython $v: GIL waits are seen" "$(cut -d. -f1 "$TMPD/gil")" -gt 50000
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_states.py" "$TMPD/o.json" "$TMPD/otruth.json" --holder-only
	gil_flows_ok "$TMPD/o.json" "$TMPD/o.pftrace"
done < <(cpythons 3.7 3.8 3.9 3.10)

# many threads, each with its own state track
if check "200 threads: record" "$GPUBPF" record --quiet -o "$TMPD/m.json" -- "$py" "$W" --threads 200 --run-s 1.5; then
	cmp_ok "200 threads: each has a state track" "$(json_query "$TMPD/m.json" \
		'len({e["tid"] for e in ev if e.get("cat") == "thread_state"})')" -ge 201
	# the workers exit before the process: their states end there, not at the recording's end
	cmp_ok "200 threads: the states of threads that exited end at their exit" "$(json_query "$TMPD/m.json" '
[end := {}, [end.__setitem__(e["tid"], max(end.get(e["tid"], 0), e["ts"] + e["dur"]))
             for e in ev if e.get("cat") == "thread_state"],
 len([v for v in end.values() if v < max(end.values()) - 1000])][-1]')" -ge 200
	cmp_ok "200 threads: samples" "$(json_query "$TMPD/m.json" \
		'len([e for e in ev if e.get("cat") == "sample"])')" -gt 20
fi

# -p: a process already running, attached for one second
"$py" "$W" --threads 20 --run-s 6 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
if check "-p: record" "$GPUBPF" record --quiet -p "$w" -d 1s -o "$TMPD/p.json"; then
	cmp_ok "-p: the threads have state tracks" "$(json_query "$TMPD/p.json" \
		'len({e["tid"] for e in ev if e.get("cat") == "thread_state"})')" -ge 22
	# blocked before the recording and all through it: its state comes from /proc
	is "-p: a thread blocked all along is seen reading" "$(json_query "$TMPD/p.json" '
[tids := collections.defaultdict(set), [tids[e["tid"]].add(e["name"]) for e in ev if e.get("cat") == "thread_state"],
 len([t for t, names in tids.items() if names == {"read"}])][-1]')" 1
	cmp_ok "-p: samples" "$(json_query "$TMPD/p.json" \
		'len([e for e in ev if e.get("cat") == "sample" and "stack" in e["args"]])')" -gt 5
fi
kill "$w" 2>/dev/null
wait "$w" 2>/dev/null

check "--sample-hz 0 --no-states: record" "$GPUBPF" record --quiet --sample-hz 0 --no-states \
	-o "$TMPD/n.json" -- "$py" "$W" --threads 2 --run-s 0.3
is "--sample-hz 0 --no-states: neither states nor samples" "$(json_query "$TMPD/n.json" \
	'len([e for e in ev if e.get("cat") in ("thread_state", "sample")])')" 0
check_fails "--sample-hz: a bad rate is refused" "$GPUBPF" record --sample-hz -5 -- true
done_testing
