#!/usr/bin/env bash
# test-timeout: 300
# Late attach: record -p on CUDA jobs started WITHOUT CUDA_INJECTION64_PATH
# (a Python one and a C one, on the simulated driver) gets full GPU timing:
# gpubpf loads its injection library into the running job with ptrace.
# Every launch after the GPU window opened has its kernel, linked; a second
# recording finds the library and does not inject again; the jobs' own
# output and exit status are unchanged.  Then -a, --no-inject, and a
# refused injection (a seccomp filter) that says why; and jobs that start
# launching as gpubpf says "recording" have every kernel; a stopped job's
# library that cannot start collecting is named; a job under a debugger
# names its tracer.
. "$(dirname "$0")/lib.sh"
test_description "late attach: GPU timing for jobs started without the injection library"
require_bpf
require_sim
require_file "$SIMINJ" "$TESTBIN/cudaloop" "$TESTBIN/injtarget"
export LD_LIBRARY_PATH="$SIMLIB"
# record picks the injection library's variant for the targets' driver
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB
train=("$PY" "$GPUBPF_ROOT/sim/train.py")

lib_copies() {
	grep libgpubpf_cupti "/proc/$1/maps" | awk '{print $5}' | sort -u | wc -l
}

# record_twice NAME PID: two recordings of a running job, each checked
record_twice() {
	local name=$1 pid=$2 i
	for i in 1 2; do
		check "$name: record -p, time $i" "$GPUBPF" record -p "$pid" -d 700ms -q \
			-o "$TMPD/$name$i.json"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" --edge-ms 250 "$TMPD/$name$i.json"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_window.py" --edge-ms 250 \
			"$TMPD/$name$i.json" "$pid"
	done
	is "$name: the first recording loaded the library (late attach)" \
		"$(json_query "$TMPD/${name}1.json" "sorted(d['gpubpf']['gpu']['late_attach'])")" \
		"[\"$pid\"]"
	is "$name: the second found it and did not inject again" \
		"$(json_query "$TMPD/${name}2.json" "d['gpubpf']['gpu']['late_attach']")" "{}"
	is "$name: one copy of the library in the job" "$(lib_copies "$pid")" 1
	is "$name: the library's thread has a name of its own" \
		"$(grep -lx gpubpf-cupti /proc/"$pid"/task/*/comm | wc -l)" 1
}

# 1. a Python job (train.py), stepping until both recordings are checked
# however slow the machine, then a reference run of as many steps
"${train[@]}" --steps 100 --no-thread --until-file "$TMPD/py.stop" >"$TMPD/py.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
sleep 0.3
record_twice py "$w"
touch "$TMPD/py.stop"
wait "$w"
is "py: the job exited 0" "$?" 0
"${train[@]}" --steps "$(job_steps "$TMPD/py.out")" --no-thread >"$TMPD/ref.out" 2>&1
is "py: its output is that of a run never attached" "$(job_summary "$TMPD/py.out")" \
	"$(job_summary "$TMPD/ref.out")"

# 2. a C job
"$TESTBIN/cudaloop" "$SIMLIB/libcuda.so.1" 100 "$TMPD/c.stop" >"$TMPD/c.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
sleep 0.3
record_twice c "$w"
touch "$TMPD/c.stop"
wait "$w"
is "c: the job exited 0" "$?" 0
steps=$(sed -nE 's/^cudaloop: steps=([0-9]+) .*/\1/p' "$TMPD/c.out")
is "c: its output is unchanged" "$(cat "$TMPD/c.out")" \
	"cudaloop: steps=$steps kernels=$((steps * 3)) errors=0"
cmp_ok "c: it ran its 100 steps at least" "${steps:-0}" -ge 100

# 3. -a: every CUDA process it finds gets the library
"$TESTBIN/cudaloop" "$SIMLIB/libcuda.so.1" 100 "$TMPD/a.stop" >"$TMPD/a.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
sleep 0.3
check "record -a" "$GPUBPF" record -a -d 1500ms -q -o "$TMPD/a.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_window.py" --edge-ms 250 "$TMPD/a.json" "$w"
touch "$TMPD/a.stop"
wait "$w"
is "-a: the job exited 0" "$?" 0

# 4. --no-inject: host calls only, and the job is left alone
"$TESTBIN/cudaloop" "$SIMLIB/libcuda.so.1" 800 >/dev/null 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
"$GPUBPF" record --no-inject -p "$w" -d 300ms -q -o "$TMPD/n.json" 2>"$TMPD/n.err"
like "--no-inject: says how to get GPU timing" "$(cat "$TMPD/n.err")" \
	"pid $w: GPU timing needs libgpubpf_cupti.so loaded at start"
is "--no-inject: the library was not loaded" "$(lib_copies "$w")" 0
cmp_ok "--no-inject: host calls recorded" "$(json_query "$TMPD/n.json" \
	'len([e for e in ev if e.get("cat") == "cuda_api"])')" -gt 0

# 5. an injection refused (a seccomp filter that denies memfd_create):
# host calls only, one line naming why, the same reason in the trace, and
# the target runs on untouched
wait "$w"
is "the job recorded without the library exited 0" "$?" 0
"$TESTBIN/injtarget" seccomp 3000 "$SIMLIB/libcuda.so.1" >"$TMPD/s.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q ready "$TMPD/s.out"
"$GPUBPF" record -p "$w" -d 300ms -q -o "$TMPD/e.json" 2>"$TMPD/e.err"
like "refused: one line says why" "$(grep 'GPU timing off' "$TMPD/e.err")" \
	"^gpubpf: pid $w: GPU timing off: a seccomp filter in the target denies memfd_create; recording host calls only$"
is "refused: said once" "$(grep -c 'GPU timing off' "$TMPD/e.err")" 1
is "refused: the trace says why too" \
	"$(json_query "$TMPD/e.json" "d['gpubpf']['gpu']['errors'].get('$w', '')")" \
	"a seccomp filter in the target denies memfd_create"
is "refused: the library was not loaded" "$(lib_copies "$w")" 0
wait "$w"
is "refused: the target ran on untouched" "$?:$(tail -n 1 "$TMPD/s.out")" \
	"42:done seccomp iterations=yes unexpected=0 signals=0"
# 6. "recording" is said once the library collects: a job that starts
# launching at that line has every kernel, whether the library is loaded
# late (-p, -a) or was loaded at the job's start and waited, dormant (before, its
# window opened 50-100 ms after the line, and such a job lost its kernels
# one time in three)
for how in late dormant all; do
	got=
	for i in 1 2 3 4; do
		rm -f "$TMPD/go"
		if [[ $how != dormant ]]; then
			"$PY" "$GPUBPF_ROOT/tests/py/wait_then.py" "$TMPD/go" \
				"$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/wt.json" --deep 10 &
		else
			CUDA_INJECTION64_PATH=$SIMINJ "$PY" "$GPUBPF_ROOT/tests/py/wait_then.py" --init \
				"$TMPD/go" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/wt.json" --deep 10 &
		fi
		w=$!
		at_exit "kill $w 2>/dev/null"
		if [[ $how != dormant ]]; then
			wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
		else
			wait_for_cmd 20 grep -q libgpubpf_cupti "/proc/$w/maps"
		fi
		if [[ $how == all ]]; then
			"$GPUBPF" record -q -a -o "$TMPD/w.json" 2>"$TMPD/w.err" &
		else
			"$GPUBPF" record -q -p "$w" -o "$TMPD/w.json" 2>"$TMPD/w.err" &
		fi
		g=$!
		wait_recording "$TMPD/w.err"
		touch "$TMPD/go"
		wait "$w"
		[[ $how == all ]] && kill -INT "$g"
		wait "$g"
		got+="$(json_query "$TMPD/w.json" 'len([e for e in ev if e.get("cat") == "kernel"])')/"
		got+="$(json_query "$TMPD/wt.json" 'len([c for c in d if c["name"] == "cuLaunchKernel"])') "
	done
	is "$how: jobs that launch from \"recording\" on: kernels/launches" "$got" \
		"$(json_query "$TMPD/wt.json" '" ".join(["%d/%d" % (n, n) for n in [len([c for c in d if c["name"] == "cuLaunchKernel"])] * 4])') "
done
# 7. a job stopped (SIGSTOP, a debugger) whose library cannot open its
# window: after a second, one line says so, and the recording goes on
rm -f "$TMPD/go"
CUDA_INJECTION64_PATH=$SIMINJ "$PY" "$GPUBPF_ROOT/tests/py/wait_then.py" --init \
	"$TMPD/go" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/wt.json" --deep 10 &
w=$!
at_exit "kill -CONT $w 2>/dev/null; kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libgpubpf_cupti "/proc/$w/maps"
kill -STOP "$w"
check "stopped job: record -p" "$GPUBPF" record -q -p "$w" -d 200ms -o "$TMPD/st.json"
like "stopped job: one line names it" "$(grep 'has not started' "$TMPD/.check.out")" \
	"^gpubpf: pid $w: its injection library has not started collecting in 1.0 s: its launches until it does have no GPU record \\(the trace's gpu.window_open_us says when it did\\)$"
kill -CONT "$w"
touch "$TMPD/go"
wait "$w"
is "stopped job: it ran on, exit 0" "$?" 0
# 8. a job under a debugger (gdb, strace, py-spy: here a ptrace seize of
# its own): the library cannot be loaded, and the line names the tracer
cat >"$TMPD/tracer.py" <<'EOF'
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), None, None):   # PTRACE_SEIZE
    sys.exit("seize: errno %d" % ctypes.get_errno())
print("seized", flush=True)
time.sleep(60)
EOF
"$TESTBIN/cudaloop" "$SIMLIB/libcuda.so.1" 0 "$TMPD/d.stop" >/dev/null 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
"$PY" "$TMPD/tracer.py" "$w" >"$TMPD/tracer.out" 2>&1 &
tr=$!
at_exit "kill $tr 2>/dev/null"
wait_for_cmd 10 grep -q seized "$TMPD/tracer.out"
check "debugged job: record -p" "$GPUBPF" record -q -p "$w" -d 300ms -o "$TMPD/dbg.json"
like "debugged job: one line names its tracer" "$(grep 'GPU timing off' "$TMPD/.check.out")" \
	"^gpubpf: pid $w: GPU timing off: it is being traced by pid $tr \\(python3[^)]*\\), and a process has one tracer at a time; recording host calls only$"
cmp_ok "debugged job: its calls are recorded" "$(json_query "$TMPD/dbg.json" \
	'len([e for e in ev if e.get("cat") == "cuda_api"])')" -gt 0
is "debugged job: the library was not loaded" "$(lib_copies "$w")" 0
kill "$tr"
wait "$tr" 2>/dev/null
kill "$w"
# 8. a job that loads libcuda only after record -p started, gpubpf itself
# unable to find libcuda (sudo drops LD_LIBRARY_PATH): held as it maps
# libcuda, probed, continued, then the library loaded late (it was tried
# while the job was still held: "the target is stopped", no GPU timing),
# and nothing said to be missed (a scan of the job while held said so)
printf '%s\n' 'import os, runpy, sys, time' \
	'while not os.path.exists(sys.argv[1]):' '    time.sleep(0.01)' \
	'sys.argv = sys.argv[2:]' 'runpy.run_path(sys.argv[0], run_name="__main__")' >"$TMPD/later.py"
rm -f "$TMPD/go8"
"$PY" "$TMPD/later.py" "$TMPD/go8" "$GPUBPF_ROOT/sim/train.py" --steps 60 --no-thread \
	--truth "$TMPD/t8.json" >"$TMPD/l8.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
env -u LD_LIBRARY_PATH "$GPUBPF" record -v -p "$w" -o "$TMPD/l8.json" 2>"$TMPD/l8.err" &
g=$!
wait_recording "$TMPD/l8.err"
touch "$TMPD/go8"
wait "$w"
is "loads later: the job exited 0" "$?" 0
wait "$g"
is "loads later: record ends with it, exit 0" "$?" 0
like "loads later: held as it mapped libcuda" "$(cat "$TMPD/l8.err")" \
	"gpubpf: pid $w loaded [^ ]*libcuda.so.1, held until probed"
is "loads later: GPU timing on, nothing said missed" \
	"$(grep -c 'GPU timing off\|may be missing\|probed only after' "$TMPD/l8.err")" 0
is "loads later: the library was loaded late" \
	"$(json_query "$TMPD/l8.json" "sorted(d['gpubpf']['gpu']['late_attach'])")" "[\"$w\"]"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_window.py" "$TMPD/l8.json" "$w"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/l8.json" "$TMPD/t8.json" \
	"$(probed_list)"
cmp_ok "loads later: most launches have their kernel" "$(json_query "$TMPD/l8.json" \
	'len([e for e in ev if e.get("cat") == "kernel"])')" -gt 400
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/a.json"
perfetto_ok "$TMPD/e.json"
done_testing
