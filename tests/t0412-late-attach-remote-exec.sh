#!/usr/bin/env bash
# test-timeout: 180
# Late attach into a Python job whose only thread never blocks (it spins
# in Python: no thread asleep at a safe point for ptrace): on CPython
# 3.14+ gpubpf asks the interpreter to run its loading script at a safe
# point (PEP 768), and the job gets full GPU timing; the job's output is
# unchanged and nothing is left in its /tmp.  With the main thread in a
# long C call, the thread running Python is asked; in a job that made a
# subinterpreter, the main interpreter's.  Where the job disabled
# remote debugging, or runs an older CPython, GPU timing is off and the
# reason says so.
. "$(dirname "$0")/lib.sh"
test_description "late attach through CPython's remote execution (PEP 768)"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB
job=$GPUBPF_ROOT/tests/py/spin_job.py
N=40

# our files in a job's /tmp: gpubpf-XXXXXX directories
spots() {
	find /tmp -maxdepth 1 -regextype egrep -regex '/tmp/gpubpf-[A-Za-z0-9]{6}' | wc -l
}

# start NAME PY [ENV...]: the job, spinning once ready; sets $w
start() {
	local name=$1 py=$2
	shift 2
	mkdir -p "$TMPD/$name"
	env "$@" "$py" "$job" "$SIMLIB/libcuda.so.1" "$TMPD/$name/ready" "$TMPD/$name/go" "$N" \
		"$TMPD/$name/truth.json" >"$TMPD/$name/out" 2>"$TMPD/$name/err" &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_file "$TMPD/$name/ready" 30
}

# finish NAME: let the job launch, wait for it and the recording
finish() {
	local name=$1
	touch "$TMPD/$name/go"
	wait "$w"
	is "$name: the job exited 0, its output its own" \
		"$?:$(cat "$TMPD/$name/out" "$TMPD/$name/err")" "0:spin_job: $N launches"
	wait "$rec"
	is "$name: record exited 0" "$?" 0
}

before=$(spots)
nver=0
while read -r py; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	nver=$((nver + 1))
	start "$v" "$py"
	"$GPUBPF" record -v -p "$w" -d 3s -o "$TMPD/$v/t.json" >"$TMPD/$v/rec.out" 2>&1 &
	rec=$!
	wait_for_cmd 30 grep -q libgpubpf_cupti "/proc/$w/maps"
	sleep 0.5       # the window opens at the library's next poll
	finish "$v"
	like "$v: CPython ran the loading script on the job's thread" \
		"$(grep "loaded libgpubpf_cupti.so" "$TMPD/$v/rec.out")" \
		"late attach: CPython ran gpubpf's script on thread $w, for [0-9.]+ ms"
	is "$v: the trace says which thread, and how long it ran the script" \
		"$(json_query "$TMPD/$v/t.json" \
		"[(k, v['thread'], v['stall_us'] > 0) for k, v in d['gpubpf']['gpu']['late_attach'].items()]")" \
		"[[\"$w\", $w, true]]"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/$v/t.json" "$TMPD/$v/truth.json"
	is "$v: no GPU timing error" "$(json_query "$TMPD/$v/t.json" 'd["gpubpf"]["gpu"]["errors"]')" "{}"
done < <(cpythons 3.14 3.15)
((nver)) || skip "no CPython 3.14 or 3.15 (pyenv, or bash scripts/sid-python.sh)" 8
is "no file of gpubpf's left in the jobs' /tmp" "$(spots)" "$before"

# the main thread busy in C with the GIL released, a second one running
# Python: the second is asked, and takes the request at once
py=$(cpythons 3.14 3.15 | head -n 1)
if [[ -n $py ]]; then
	mkdir -p "$TMPD/gil"
	"$py" "$GPUBPF_ROOT/tests/py/gil_job.py" "$SIMLIB/libcuda.so.1" "$TMPD/gil/ready" 5 \
		>"$TMPD/gil/out" 2>"$TMPD/gil/err" &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_file "$TMPD/gil/ready" 30
	spinner=$(cat "$TMPD/gil/ready")
	check "GIL: record -p" "$GPUBPF" record -p "$w" -d 300ms -q -o "$TMPD/gil/t.json"
	is "GIL: the thread running Python ran the script, not the main thread" \
		"$(json_query "$TMPD/gil/t.json" \
		"[v['thread'] for v in d['gpubpf']['gpu']['late_attach'].values()]")" "[$spinner]"
	wait "$w"
	is "GIL: the job exited 0, its output its own" "$?:$(cat "$TMPD/gil/out" "$TMPD/gil/err")" \
		"0:gil_job: done"
else
	skip "no CPython 3.14 or 3.15" 3
fi

# a job that made a subinterpreter first (CPython lists interpreters newest
# first): the main interpreter's thread is asked, and runs the script
if [[ -n $py ]]; then
	mkdir -p "$TMPD/sub"
	"$py" "$GPUBPF_ROOT/tests/py/subinterp_first.py" "$job" "$SIMLIB/libcuda.so.1" \
		"$TMPD/sub/ready" "$TMPD/sub/go" "$N" "$TMPD/sub/truth.json" \
		>"$TMPD/sub/out" 2>"$TMPD/sub/err" &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_file "$TMPD/sub/ready" 30
	"$GPUBPF" record -v -p "$w" -d 3s -o "$TMPD/sub/t.json" >"$TMPD/sub/rec.out" 2>&1 &
	rec=$!
	wait_for_cmd 30 grep -q -e libgpubpf_cupti -e "GPU timing off" "/proc/$w/maps" "$TMPD/sub/rec.out"
	sleep 0.5       # the window opens at the library's next poll
	finish sub
	like "subinterpreter: CPython ran the loading script on the job's thread" \
		"$(grep -e "loaded libgpubpf_cupti.so" -e "GPU timing off" "$TMPD/sub/rec.out")" \
		"late attach: CPython ran gpubpf's script on thread $w, for [0-9.]+ ms"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/sub/t.json" "$TMPD/sub/truth.json"
else
	skip "no CPython 3.14 or 3.15" 3
fi

# remote debugging disabled in the job: host calls only, both reasons said
if [[ -n $py ]]; then
	start off "$py" PYTHON_DISABLE_REMOTE_DEBUG=1
	"$GPUBPF" record -p "$w" -d 2s -q -o "$TMPD/off/t.json" >"$TMPD/off/rec.out" 2>&1 &
	rec=$!
	wait_for_cmd 30 grep -q "GPU timing off" "$TMPD/off/rec.out"
	finish off
	like "disabled: the reason names both ways" "$(cat "$TMPD/off/rec.out")" \
		"gpubpf: pid $w: GPU timing off: no thread of the target stopped at a safe point .* in time; CPython 3.1[0-9]'s remote debugging is disabled in it .PYTHON_DISABLE_REMOTE_DEBUG, -X disable_remote_debug.; recording host calls only"
	is "disabled: the library was not loaded" "$(json_query "$TMPD/off/t.json" \
		'd["gpubpf"]["gpu"]["late_attach"]')" "{}"
else
	skip "no CPython 3.14 or 3.15" 4
fi

# the script fails in the job (an audit hook of the job refuses the
# library's dlopen): host calls only, the script's error said
if [[ -n $py ]]; then
	deny='import runpy, sys
def deny(event, args):
    if event == "ctypes.dlopen" and str(args[0]).startswith("/proc/self/fd/"):
        raise PermissionError("no dlopen from a memfd here")
sys.addaudithook(deny)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")'
	mkdir -p "$TMPD/deny"
	"$py" -c "$deny" "$job" "$SIMLIB/libcuda.so.1" "$TMPD/deny/ready" "$TMPD/deny/go" "$N" \
		"$TMPD/deny/truth.json" >"$TMPD/deny/out" 2>"$TMPD/deny/err" &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_file "$TMPD/deny/ready" 30
	"$GPUBPF" record -p "$w" -d 2s -q -o "$TMPD/deny/t.json" >"$TMPD/deny/rec.out" 2>&1 &
	rec=$!
	wait_for_cmd 30 grep -q "GPU timing off" "$TMPD/deny/rec.out"
	finish deny
	like "script failed: its error said" "$(grep "GPU timing off" "$TMPD/deny/rec.out")" \
		"; the script CPython ran for gpubpf failed: PermissionError: no dlopen from a memfd here; recording host calls only$"
	is "script failed: no library in the job, no file left" \
		"$(json_query "$TMPD/deny/t.json" 'd["gpubpf"]["gpu"]["late_attach"]'):$(spots)" "{}:$before"
else
	skip "no CPython 3.14 or 3.15" 4
fi

# CPython before 3.14: the ptrace reason alone
py=$(cpythons 3.12 3.11 | head -n 1)
if [[ -n $py ]]; then
	start old "$py"
	"$GPUBPF" record -p "$w" -d 2s -q -o "$TMPD/old/t.json" >"$TMPD/old/rec.out" 2>&1 &
	rec=$!
	wait_for_cmd 30 grep -q "GPU timing off" "$TMPD/old/rec.out"
	finish old
	like "CPython $("$py" -c 'import sys; print(sys.version_info[1])' | sed 's/^/3./'): ptrace's reason alone" \
		"$(grep "GPU timing off" "$TMPD/old/rec.out")" \
		"GPU timing off: no thread of the target stopped at a safe point \(blocked in futex, poll, read, sleep...\) in time; recording host calls only$"
else
	skip "no CPython 3.11 or 3.12" 3
fi
done_testing
