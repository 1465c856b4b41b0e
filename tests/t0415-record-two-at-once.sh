#!/usr/bin/env bash
# test-timeout: 240
# Two recordings of one job at once (two people at one node, or a cluster
# capture with -a beside someone's -p): the second finds the injection
# library already collecting for the first, its markers' semaphores raised
# as they were.  It tells the library it joined (gpubpf_joins), and the
# library sends it the kernel names again and opens its GPU window: every
# kernel it records is named, its window is known, and it does not say
# that the library never started.  The first recording loses nothing and
# goes on after the second ends.  So with the library's CUPTI backend; and
# a library that could not start (CUPTI held by another profiler) tells
# the second why, as it told the first.  Two -a recordings that both hold
# a job as it loads libcuda: the one that lets it go second says that the
# job's first calls may be missing from its trace.
. "$(dirname "$0")/lib.sh"
test_description "two recordings of one job at once: the second gets names, window, GPU records"
require_bpf
require_sim
require_file "$SIMINJ" "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$SIMLIB/libcupti_sim.so"
export LD_LIBRARY_PATH="$SIMLIB"
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB
train=("$PY" "$GPUBPF_ROOT/sim/train.py")
# the simulated job's kernels (sim/train.py)
kernels='["attention_bwd", "attention_fwd", "linear_bwd_data", "linear_bwd_weight", "linear_fwd", "loss_fwd", "prefetch", "relu_fwd", "sgd_update"]'

# the kernel names of a trace, and how many kernels it has
kernel_names() {
	json_query "$1" 'sorted(set(e["name"] for e in ev if e.get("cat") == "kernel"))'
}

# both NAME JOB FIRST... -- SECOND...: the first recording (5 s, in the
# background), then, once it records, the second (1 s) of job JOB
both() {
	local name=$1 w=$2 first=() a
	shift 2
	while [[ $1 != -- ]]; do
		first+=("$1")
		shift
	done
	shift
	"$GPUBPF" record -q -d 5s -o "$TMPD/${name}1.json" "${first[@]}" 2>"$TMPD/${name}1.err" &
	a=$!
	at_exit "kill $a 2>/dev/null"
	wait_recording "$TMPD/${name}1.err"
	check "$name: the second recording ($*), during the first (${first[*]})" \
		"$GPUBPF" record -q -d 1s -o "$TMPD/${name}2.json" "$@"
	cp "$TMPD/.check.out" "$TMPD/${name}2.err"
	ok "$name: the first still records as the second ends" kill -0 "$a"
	wait "$a"
	is "$name: the first recording exited 0" "$?" 0
}

# joined NAME JOB: both recordings of JOB have its named kernels, linked
joined() {
	local name=$1 w=$2 i
	is "$name: the second does not say the library never started" \
		"$(grep -c 'has not started collecting' "$TMPD/${name}2.err")" 0
	for i in 1 2; do
		is "$name: recording $i: every kernel named" "$(kernel_names "$TMPD/$name$i.json")" \
			"$kernels"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" --edge-ms 250 "$TMPD/$name$i.json"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_window.py" --edge-ms 250 \
			"$TMPD/$name$i.json" "$w"
	done
	# the first went on after the second: GPU work in its last second
	cmp_ok "$name: the first has kernels in its last second, after the second ended" \
		"$(json_query "$TMPD/${name}1.json" '(lambda end: len([e for e in ev
 if e.get("cat") == "kernel" and e["ts"] > end - 1e6]))(max(e["ts"] for e in ev
 if e.get("cat") == "cuda_api"))')" -gt 100
}

job() {
	"$@" "${train[@]}" --steps 100 --no-thread --until-file "$TMPD/stop" \
		>"$TMPD/job.out" 2>&1 &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
}

endjob() {
	touch "$TMPD/stop"
	wait "$w"
	is "$1: the job exited 0" "$?" 0
	like "$1: the job printed its summary" "$(cat "$TMPD/job.out")" "^train.py: pid $w steps [0-9]+ "
	rm -f "$TMPD/stop"
}

# 1. a job started without the library: the first loads it (late attach)
job
both late "$w" -p "$w" -- -p "$w"
is "late: the library was loaded once, by the first" \
	"$(json_query "$TMPD/late1.json" "sorted(d['gpubpf']['gpu']['late_attach'])"):$(json_query \
	"$TMPD/late2.json" "d['gpubpf']['gpu']['late_attach']")" "[\"$w\"]:{}"
joined late "$w"
endjob late

# 2. a job started with the library, -p then -a
job env CUDA_INJECTION64_PATH="$SIMINJ"
both pa "$w" -p "$w" -- -a
joined pa "$w"
# 3. and -a then -p (the same job)
both ap "$w" -a -- -p "$w"
joined ap "$w"
endjob "pa, ap"

# 4. the shipped library's CUPTI backend (over build/sim/libcupti_sim.so;
# copied away from build/, so that the simulated driver keeps it)
cp "$GPUBPF_ROOT/build/libgpubpf_cupti.so" "$TMPD/"
job env CUDA_INJECTION64_PATH="$TMPD/libgpubpf_cupti.so" GPUBPF_CUPTI_LIB="$SIMLIB/libcupti_sim.so"
both cupti "$w" -p "$w" -- -p "$w"
joined cupti "$w"
endjob cupti

# 5. the library could not start (CUPTI held by another profiler): the
# second recording is told why, as the first was
why="cupti: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another profiler is attached)"
job env SIMCUPTI_BUSY=1 GPUBPF_CUPTI_LIB="$SIMLIB/libcupti_sim.so"
both busy "$w" --cupti-lib "$TMPD/libgpubpf_cupti.so" -p "$w" -- \
	--cupti-lib "$TMPD/libgpubpf_cupti.so" -p "$w"
for i in 1 2; do
	is "busy: recording $i says why" \
		"$(grep -h 'GPU timing off\|has not started' "$TMPD/busy$i.err")" \
		"gpubpf: pid $w: GPU timing off: $why"
	is "busy: recording $i keeps it in the trace" \
		"$(json_query "$TMPD/busy$i.json" 'list(d["gpubpf"]["gpu"]["errors"].values())')" \
		"[\"$why\"]"
done
endjob busy

# 6. two -a recordings as a job loads a libcuda neither has probed (a
# copy of its own): both stop it there until their probes are in, and
# the first to be done lets it go.  The second, stopped meanwhile, cannot
# have its first calls: it says so, where before it said nothing
mkdir -p "$TMPD/own"
cp "$SIMLIB/libcuda.so.1" "$TMPD/own/"
"$PY" "$GPUBPF_ROOT/tests/py/load_later.py" "$TMPD/go" "$TMPD/own/libcuda.so.1" "$TMPD/done" \
	>"$TMPD/ll.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
"$GPUBPF" record -a -o "$TMPD/h1.json" 2>"$TMPD/h1.err" &
a=$!
at_exit "kill $a 2>/dev/null"
wait_recording "$TMPD/h1.err"
"$GPUBPF" record -a -o "$TMPD/h2.json" 2>"$TMPD/h2.err" &
b=$!
at_exit "kill -CONT $b 2>/dev/null; kill $b 2>/dev/null"
wait_recording "$TMPD/h2.err"
kill -STOP "$b"
touch "$TMPD/go"
wait_for_cmd 10 grep -q 'cuInit 0' "$TMPD/ll.out"
is "held: the first recording let the job go on" "$(cat "$TMPD/ll.out")" "cuInit 0"
kill -CONT "$b"
sleep 1
touch "$TMPD/done"
wait "$w"
is "held: the job exited 0" "$?" 0
kill -INT "$a" "$b"
wait "$a"
is "held: the first recording exited 0" "$?" 0
wait "$b"
is "held: the second recording exited 0" "$?" 0
is "held: the first has the job's cuInit, and nothing missed" "$(json_query "$TMPD/h1.json" \
	"[len([e for e in ev if e.get('pid') == $w and e.get('name') == 'cuInit']),
	  d['gpubpf']['calls_may_be_missing'].get('$w')]")" "[1, null]"
like "held: the second says the job's calls may be missing" "$(cat "$TMPD/h2.err")" \
	"calls of 1 process may be missing"
like "held: and why, in its trace" "$(json_query "$TMPD/h2.json" \
	"d['gpubpf']['calls_may_be_missing'].get('$w')")" "^another recorder .or a SIGCONT. let it go on"
done_testing
