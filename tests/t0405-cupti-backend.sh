#!/usr/bin/env bash
# test-timeout: 240
# The shipped injection library's CUPTI backend (cupti/backend_cupti.c),
# end to end without a GPU: build/sim/libcupti_sim.so gives it CUPTI's API
# (callbacks by id, activity buffers in the CUDA 13 layouts, one
# subscriber, cuptiFinalize safe only from an API-exit callback) over the
# simulated driver.  The library is copied away from build/, so the
# simulated driver does not swap in its own variant.
#  1. record -- CMD: every launch, copy and memset has its GPU record,
#     linked, with its duration;
#  2. record -p twice on a job started without the library: each detach
#     finalizes CUPTI from the job's own API-exit callback, and the next
#     attach subscribes afresh; the job's output and status are unchanged;
#  3. detached while the job makes no driver call: the finalize waits for
#     its next call; a re-attach before that takes the request back;
#  4. CUPTI held by another profiler, or a CUPTI too old: host calls only,
#     the reason on stderr and in the trace; the job runs on.  A CUPTI that
#     says it is CUPTI 12 is used as 13 is (the records read are at the same
#     offsets in both: cupti_convert.c).
. "$(dirname "$0")/lib.sh"
test_description "CUPTI backend on the simulated driver: records, late attach, finalize on detach"
require_bpf
require_sim
require_file "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$SIMLIB/libcupti_sim.so" \
	"$TESTBIN/cudacalls"
export LD_LIBRARY_PATH="$SIMLIB"
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB
cp "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$TMPD/"
LIB="$TMPD/libgpubpf_cupti.so"
export GPUBPF_CUPTI_LIB="$SIMLIB/libcupti_sim.so"
export SIMCUPTI_LOG="$TMPD/cupti.log"
train=("$PY" "$GPUBPF_ROOT/sim/train.py")

# 1. record -- CMD
check "record -- train.py" "$GPUBPF" record --cupti-lib "$LIB" -q -o "$TMPD/t.json" -- \
	"${train[@]}" --steps 8 --truth "$TMPD/truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/t.json" "$TMPD/truth.json"
is "record -- train.py: copies carry their bytes and direction" "$(json_query "$TMPD/t.json" \
	'sorted({(e["args"]["kind"], e["args"]["bytes"]) for e in ev if e.get("cat") == "gpu_memcpy"})')" \
	"$(json_query "$TMPD/truth.json" 'sorted({(c["args"]["kind"], c["args"]["bytes"]) for c in d if c["name"].startswith("cuMemcpy") and c["ret"] == 0})')"
is "record -- train.py: no GPU record lost, no error" \
	"$(json_query "$TMPD/t.json" '[d["gpubpf"]["gpu"]["dropped_events"], d["gpubpf"]["gpu"]["errors"]]')" \
	"[{}, {}]"
check "record -- cudacalls (graphs, every entry point)" "$GPUBPF" record --cupti-lib "$LIB" -q \
	-o "$TMPD/c.json" -- "$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/c.truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/c.json"
is "record -- CMD: CUPTI subscribed once, never finalized (the job exited)" \
	"$(cat "$SIMCUPTI_LOG")" "$(printf 'subscribe\nsubscribe')"

# 2. late attach, twice; each detach finalizes on one of the job's threads
: >"$SIMCUPTI_LOG"
# stepping until both recordings are checked, however slow the machine;
# then a reference run of as many steps
"${train[@]}" --steps 100 --no-thread --until-file "$TMPD/py.stop" >"$TMPD/py.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
sleep 0.3
for i in 1 2; do
	check "record -p, time $i" "$GPUBPF" record --cupti-lib "$LIB" -p "$w" -d 700ms -q \
		-o "$TMPD/p$i.json"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" --edge-ms 250 "$TMPD/p$i.json"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_window.py" --edge-ms 250 "$TMPD/p$i.json" "$w"
	# the finalize is asked for at detach and done at the job's next API exit
	wait_for_cmd 10 sh -c 'test "$(grep -c finalize "$1")" -ge "$2"' sh "$SIMCUPTI_LOG" "$i"
done
is "record -p: the first recording loaded the library" \
	"$(json_query "$TMPD/p1.json" "sorted(d['gpubpf']['gpu']['late_attach'])")" "[\"$w\"]"
is "record -p: subscribed and finalized at each recording, in that order" \
	"$(sed 's/ .*//' "$SIMCUPTI_LOG")" "$(printf 'subscribe\nfinalize\nsubscribe\nfinalize')"
is "record -p: finalized on the launching thread, from its API-exit callback, nothing unflushed" \
	"$(grep finalize "$SIMCUPTI_LOG" | sort -u)" \
	"finalize tid=$w in=exit-callback unflushed_bytes=0"
touch "$TMPD/py.stop"
wait "$w"
is "record -p: the job exited 0" "$?" 0
"${train[@]}" --steps "$(job_steps "$TMPD/py.out")" --no-thread >"$TMPD/ref.out" 2>&1
is "record -p: the job's output is that of a run never attached" "$(job_summary "$TMPD/py.out")" \
	"$(job_summary "$TMPD/ref.out")"

# 3. detached while idle: finalize deferred to the next call; re-attach takes it back
: >"$SIMCUPTI_LOG"
mkdir "$TMPD/idle"
"$PY" "$GPUBPF_ROOT/tests/py/idle_workload.py" "$TMPD/idle" >"$TMPD/idle.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_file "$TMPD/idle/idle" 20
check "idle: record -p" "$GPUBPF" record --cupti-lib "$LIB" -p "$w" -d 300ms -q -o "$TMPD/i1.json"
sleep 0.5
is "idle: detached, no driver call since: not finalized yet" "$(cat "$SIMCUPTI_LOG")" subscribe
check "idle: record -p again" "$GPUBPF" record --cupti-lib "$LIB" -p "$w" -d 300ms -q \
	-o "$TMPD/i2.json"
is "idle: the re-attach reused the subscription (the finalize was taken back)" \
	"$(cat "$SIMCUPTI_LOG")" subscribe
touch "$TMPD/idle/go"
wait "$w"
is "idle: the job exited 0 with its output" "$?:$(cat "$TMPD/idle.out")" "0:400"
is "idle: finalized at the job's first call after the last detach" \
	"$(sed 's/ .*//' "$SIMCUPTI_LOG")" "$(printf 'subscribe\nfinalize')"

# 4. CUPTI not usable: host calls only, said once, in the trace too
SIMCUPTI_BUSY=1 check "busy: record -- train.py" "$GPUBPF" record --cupti-lib "$LIB" -q \
	-o "$TMPD/b.json" -- "${train[@]}" --steps 2
like "busy: stderr names the other profiler" "$(cat "$TMPD/.check.out")" \
	"GPU timing off: cupti: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED .another profiler is attached."
is "busy: the same reason in the trace, no GPU work, host calls kept" "$(json_query "$TMPD/b.json" '
[sorted(d["gpubpf"]["gpu"]["errors"].values()),
 len([e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]),
 len([e for e in ev if e.get("cat") == "cuda_api" and e["name"] == "cuLaunchKernel"]) > 0]')" \
	'[["cupti: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another profiler is attached)"], 0, true]'
# no libcupti to load (a CUDA 12 driver, none of CUPTI 12 anywhere): the
# library stays, to tell each recorder why
nocupti=(env -u GPUBPF_CUPTI_LIB SIMCUDA_DRIVER_VERSION=12080 CUDA_HOME=/nonexistent)
why="no libcupti.so.12 found (set GPUBPF_CUPTI_LIB to its path)"
check "no libcupti: record -- train.py" "${nocupti[@]}" "$GPUBPF" record --cupti-lib "$LIB" -q \
	-o "$TMPD/n.json" -- "${train[@]}" --steps 2
is "no libcupti: said once, on the job's stderr" \
	"$(grep -c "^gpubpf: GPU timing off: $why$" "$TMPD/.check.out"):$(grep -c "GPU timing off" "$TMPD/.check.out")" "1:1"
is "no libcupti: the same reason in the trace, host calls kept" "$(json_query "$TMPD/n.json" '
[sorted(d["gpubpf"]["gpu"]["errors"].values()),
 len([e for e in ev if e.get("cat") == "cuda_api" and e["name"] == "cuLaunchKernel"]) > 0]')" \
	"[[\"$why\"], true]"

# the same two, late: the recorder says why, the job's own stderr is left alone
late_off() {
	local name=$1 reason=$2 w i
	shift 2
	"$@" "${train[@]}" --steps 900 --no-thread >"$TMPD/$name.out" 2>"$TMPD/$name.err" &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
	for i in 1 2; do
		check "$name, late: record -p, time $i" "$GPUBPF" record --cupti-lib "$LIB" -p "$w" \
			-d 300ms -q -o "$TMPD/$name$i.json"
		is "$name, late: recording $i says why, naming the job" \
			"$(grep "GPU timing off" "$TMPD/.check.out")" "gpubpf: pid $w: GPU timing off: $reason"
		is "$name, late: recording $i keeps it in the trace" \
			"$(json_query "$TMPD/$name$i.json" 'list(d["gpubpf"]["gpu"]["errors"].values())')" \
			"$(printf '["%s"]' "$reason")"
	done
	wait "$w"
	is "$name, late: the job exited 0, nothing of gpubpf's in its output" \
		"$?:$(cat "$TMPD/$name.out" "$TMPD/$name.err" | grep -c gpubpf)" "0:0"
	like "$name, late: the job printed its summary" "$(cat "$TMPD/$name.err")" "^train.py: pid $w steps 900 "
}
late_off busy "cupti: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another profiler is attached)" \
	env SIMCUPTI_BUSY=1
late_off nocupti "$why" "${nocupti[@]}"

SIMCUPTI_API_VERSION=24 check "CUPTI 12 (API 24, CUDA 12.6): record -- train.py" "$GPUBPF" record \
	--cupti-lib "$LIB" -q -o "$TMPD/v12.json" -- "${train[@]}" --steps 4 --truth "$TMPD/v12.truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/v12.json" "$TMPD/v12.truth.json"
SIMCUPTI_API_VERSION=110000 check "CUPTI 11: record -- train.py" "$GPUBPF" record --cupti-lib "$LIB" \
	-q -o "$TMPD/v.json" -- "${train[@]}" --steps 2
like "CUPTI 11: stderr says which versions are read" "$(cat "$TMPD/.check.out")" \
	"GPU timing off: cupti: libcupti API version 110000 .CUDA 11.; gpubpf reads CUPTI 12 and 13"
done_testing
