#!/usr/bin/env bash
# test-timeout: 180
# CUPTI 12 for real, without a GPU: Debian's libcupti12 and its headers
# (CUDA 12.4; scripts/cupti12.sh puts them in /var/lib/gpubpf/cupti12).
#  1. The records that release writes, laid out by its own headers (the
#     newest version of each struct they declare), convert to the very
#     bytes of the same values in CUDA 13.0's (tests/cupti12/).
#  2. Its cuptiGetVersion() is read as CUPTI 12.
#  3. A job that loads it, at its start or late (its wheel's copy, picked
#     under a CUDA 12 driver), is recorded: host calls, and GPU timing off
#     past the version check (CUPTI needs NVIDIA's driver, not the
#     simulated one), saying why in one line and in the trace; the job's
#     own output is unchanged.
. "$(dirname "$0")/lib.sh"
test_description "CUPTI 12: Debian's libcupti 12 records, version and loading"
require_gpubpf
require_sim
C12=${GPUBPF_CUPTI12:-/var/lib/gpubpf/cupti12}
[[ -f "$C12/.gpubpf-cupti12" ]] ||
	skip_all "no CUPTI 12 in $C12 (bash scripts/cupti12.sh fetches it from Debian's archive)"
require_cmd cc
require_file "$GPUBPF_ROOT/build/cupti/cupti_convert.o" "$GPUBPF_ROOT/build/cupti/cupti_pick.o" \
	"$GPUBPF_ROOT/build/libgpubpf_cupti.so"
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
inc=$C12/include
so=$C12/lib/libcupti.so.12

# 1 and 2: each struct type is the newest its headers declare, what that
# CUPTI writes (Kernel9 ... in 12.4)
newest() {
	grep -ohE "\} CUpti_Activity$1[0-9]*;" "$inc"/cupti_activity*.h | tr -d '}; ' |
		sort -V | tail -n 1
}
defs=()
for t in KERNEL:Kernel MEMCPY:Memcpy PEER:MemcpyPtoP MEMSET:Memset SYNC:Synchronization \
	MEMORY:Memory; do
	defs+=("-D${t%%:*}_T=$(newest "${t#*:}")")
done
src=$GPUBPF_ROOT/tests/cupti12
# its headers ahead of the toolkit's, which gives cuda.h
check "build the records with CUPTI 12's headers (${defs[*]})" cc -O1 -Wall -I"$inc" \
	-I"$CUDA_INC" -I"$GPUBPF_ROOT/tests/unit" -I"$src" "${defs[@]}" -c "$src/fill12.c" \
	-o "$TMPD/fill12.o"
check "build their check with CUDA 13.0's and gpubpf's converter" cc -O1 -Wall -I"$CUDA_INC" \
	-I"$GPUBPF_ROOT/cupti" -I"$GPUBPF_ROOT/tests/unit" -I"$src" -o "$TMPD/check12" \
	"$src/check12.c" "$TMPD/fill12.o" "$GPUBPF_ROOT/build/cupti/cupti_convert.o" \
	"$GPUBPF_ROOT/build/cupti/cupti_pick.o" -ldl
# (its TAP lines numbered, as the unit tests' are)
tap_from bash -o pipefail -c '"$1" "$2" | sed -E "s/^(not )?ok [0-9]+ /\\1ok /"' check12 \
	"$TMPD/check12" "$so"

# 3. Loaded into jobs on the simulated driver by the shipped library (a
# copy: record would load the simulator's variant, which has no CUPTI)
export LD_LIBRARY_PATH="$SIMLIB"
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB GPUBPF_CUPTI_LIB
cp "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$TMPD/"
LIB="$TMPD/libgpubpf_cupti.so"
train=("$PY" "$GPUBPF_ROOT/sim/train.py")
# what it says: it got past cuptiGetVersion, CUPTI itself found no driver
reason_re="^cupti: cuptiSubscribe: CUPTI_ERROR_[A-Z_]+\$"

"${train[@]}" --steps 4 >"$TMPD/ref.out" 2>&1
GPUBPF_CUPTI_LIB="$so" check "record -- train.py, GPUBPF_CUPTI_LIB=Debian's libcupti.so.12" \
	"$GPUBPF" record --cupti-lib "$LIB" -q -o "$TMPD/t.json" -- "${train[@]}" --steps 4 \
	--truth "$TMPD/truth.json"
why=$(json_query "$TMPD/t.json" 'list(d["gpubpf"]["gpu"]["errors"].values())[0]')
like "record --: the trace says why GPU timing is off, past the version check" "$why" "$reason_re"
is "record --: said once, the same, on the job's stderr" \
	"$(grep "GPU timing off" "$TMPD/.check.out")" "gpubpf: GPU timing off: $why"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/t.json" "$TMPD/truth.json" "$(probed_list)"
is "record --: the job's output is that of a run not recorded" \
	"$(grep -v gpubpf "$TMPD/.check.out" | job_summary /dev/stdin)" "$(job_summary "$TMPD/ref.out")"

# late: a job whose site-packages has CUDA 12's wheel copy of CUPTI (a
# loaded object lies under that site-packages), under a CUDA 12 driver
sp=$TMPD/venv/lib/python3.12/site-packages
mkdir -p "$sp/pkg" "$sp/nvidia/cuda_cupti/lib"
cp "$so" "$sp/nvidia/cuda_cupti/lib/libcupti.so.12"
libz=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -n 1)
cp "$libz" "$sp/pkg/libz.so.1"
job='import ctypes, runpy, sys
ctypes.CDLL(sys.argv[1])
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")'
# stepping until its maps are checked, however slow the machine
SIMCUDA_DRIVER_VERSION=12080 CUDA_HOME=/nonexistent "$PY" -c "$job" "$sp/pkg/libz.so.1" \
	"${train[@]:1}" --steps 100 --no-thread --until-file "$TMPD/late.stop" \
	>"$TMPD/late.out" 2>"$TMPD/late.err" &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
for i in 1 2; do
	check "late: record -p, time $i" "$GPUBPF" record --cupti-lib "$LIB" -p "$w" -d 400ms -q \
		-o "$TMPD/l$i.json"
	why=$(json_query "$TMPD/l$i.json" 'list(d["gpubpf"]["gpu"]["errors"].values())[0]')
	like "late, recording $i: the trace says why, past the version check" "$why" "$reason_re"
	is "late, recording $i: said once, naming the job" \
		"$(grep "GPU timing off" "$TMPD/.check.out")" "gpubpf: pid $w: GPU timing off: $why"
	like "late, recording $i: host calls recorded" "$(json_query "$TMPD/l$i.json" \
		'len([e for e in ev if e.get("cat") == "cuda_api" and e["pid"] == '"$w"'])')" "^[1-9][0-9]*$"
done
is "late: the job's wheel copy of CUPTI 12 is the one loaded" \
	"$(grep libcupti "/proc/$w/maps" | awk '{print $6}' | sort -u)" \
	"$sp/nvidia/cuda_cupti/lib/libcupti.so.12"
is "late: loaded by the first recording, found by the second" "$(json_query "$TMPD/l1.json" \
	"list(d['gpubpf']['gpu']['late_attach'])"):$(json_query "$TMPD/l2.json" \
	"d['gpubpf']['gpu']['late_attach']")" "[\"$w\"]:{}"
touch "$TMPD/late.stop"
wait "$w"
is "late: the job exited 0, nothing of gpubpf's in its output" \
	"$?:$(cat "$TMPD/late.out" "$TMPD/late.err" | grep -c gpubpf)" "0:0"
"${train[@]}" --steps "$(job_steps "$TMPD/late.err")" --no-thread >"$TMPD/lref.out" 2>&1
is "late: the job's output is that of a run never attached" \
	"$(job_summary "$TMPD/late.err")" "$(job_summary "$TMPD/lref.out")"
done_testing
