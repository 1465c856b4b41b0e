#!/usr/bin/env bash
# Late attach, section 6 of `make bench` (bench/run.sh), or alone:
# `bash bench/inject_bench.sh`.  On the simulated driver (build/sim), with
# bench/gpuwork in rounds mode (LAUNCHES timed launches per round, 100 ms
# apart), started WITHOUT CUDA_INJECTION64_PATH:
#  1. target stall per injection: INJ_REPS fresh processes, each recorded
#     once with `gpubpf record -p -d 300ms` (which loads the library with
#     ptrace); the borrowed thread's stop, from the trace
#     (gpubpf.gpu.late_attach.PID.stall_us): median, p90, max.  The same
#     through CPython's remote execution: RX_REPS fresh CPython 3.14 jobs
#     whose one thread spins in Python (tests/py/spin_job.py; Debian's
#     3.14 in the chroot of scripts/sid-python.sh, skipped without it),
#     the stall being how long that thread ran gpubpf's script, and the
#     whole attach (record's own report, ptrace's 1 s search included);
#  2. per-launch cost after detach: A (never attached) and B take turns on
#     CPU 0 (gpuwork -i/-o, a ring of FIFOs); B is recorded once with -p
#     for 1 s.  Per round, B's time per launch (launches and sync: its
#     whole CPU time, all its threads being on CPU 0) over A's; medians over
#     the rounds before B's recording and after it ended; after / before
#     cancels what going second in a round is worth.  Goal: <= 1.02x.
#  3. the same with the shipped library's CUPTI backend, over CUPTI's API
#     on the simulated driver (build/sim/libcupti_sim.so, which like CUPTI
#     stays attached to the driver until cuptiFinalize): E never attached,
#     F recorded once and detached (CUPTI finalized from the job's API-exit
#     callback), G recorded once with GPUBPF_CUPTI_FINALIZE=0 (only
#     unsubscribed), taking turns: F/E and G/E, after / before.
# Knobs: INJ_REPS (20), RX_REPS (10), LAUNCHES (5000).  Writes its block
# of BENCHMARKS.md (between the inject-bench markers) unless BENCH_MD=-.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
INJ_REPS=${INJ_REPS:-20}
RX_REPS=${RX_REPS:-10}
LAUNCHES=${LAUNCHES:-5000}
BENCH_MD=${BENCH_MD:-BENCHMARKS.md}
GW=build/bench/gpuwork
for f in $GW build/gpubpf build/sim/libgpubpf_cupti.so build/sim/libcuda.so.1 \
	build/libgpubpf_cupti.so build/sim/libcupti_sim.so; do
	[ -e "$f" ] || { echo "inject_bench: $f missing (run make all bench-bins)" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$PWD/build/sim"
unset CUDA_INJECTION64_PATH
T=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$T"' EXIT
pct() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'; }
wait_cuda() { for _ in $(seq 100); do grep -q libcuda "/proc/$1/maps" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
start=$(date +%s)

# 1. stall per injection
: >"$T/stalls"
for i in $(seq "$INJ_REPS"); do
	$GW -m rounds -n 2000 -r 30 >/dev/null &
	w=$!
	PIDS+=("$w")
	wait_cuda "$w"
	sleep 0.2
	build/gpubpf record -p "$w" -d 300ms -q -o "$T/s.json" 2>/dev/null || true
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["gpubpf"]["gpu"]["late_attach"]
print(d[sys.argv[2]]["stall_us"] if sys.argv[2] in d else "fail")' "$T/s.json" "$w" >>"$T/stalls"
	kill "$w" 2>/dev/null || true
	wait "$w" 2>/dev/null || true
done
fails=$(grep -c fail "$T/stalls" || true)
grep -v fail "$T/stalls" >"$T/ok" || true
s_med=$(median <"$T/ok"); s_p90=$(pct 90 <"$T/ok"); s_max=$(pct 100 <"$T/ok")
printf '1. target stall per injection (%d injections, %d failed): median %.0f us, p90 %.0f us, max %.0f us\n' \
	"$INJ_REPS" "$fails" "$s_med" "$s_p90" "$s_max"
rx_line="not measured: no CPython 3.14 (bash scripts/sid-python.sh)"
if [ -x tests/sid-python3.14 ] && [ -x "${GPUBPF_SID:-/var/lib/gpubpf/sid}/usr/bin/python3.14" ]; then
	: >"$T/rx"
	for i in $(seq "$RX_REPS"); do
		rm -f "$T/ready"
		tests/sid-python3.14 tests/py/spin_job.py "$PWD/build/sim/libcuda.so.1" "$T/ready" \
			"$T/never" 0 "$T/truth.json" 2>/dev/null &
		w=$!
		PIDS+=("$w")
		for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.05; done
		build/gpubpf record -v -p "$w" -d 100ms -q -o "$T/r.json" 2>"$T/r.err" || true
		python3 -c 'import json, re, sys
d = json.load(open(sys.argv[1]))["gpubpf"]["gpu"]["late_attach"]
m = re.search(r"for [0-9.]+ ms; ([0-9.]+) ms in all", open(sys.argv[3]).read())
print(d[sys.argv[2]]["stall_us"] if sys.argv[2] in d and m else "fail", m.group(1) if m else 0)' \
			"$T/r.json" "$w" "$T/r.err" >>"$T/rx"
		kill "$w" 2>/dev/null || true
		wait "$w" 2>/dev/null || true
	done
	rx_fails=$(grep -c fail "$T/rx" || true)
	grep -v fail "$T/rx" >"$T/rxok" || true
	rx_line=$(printf 'script run time median %.0f us, max %.0f us; whole attach median %.0f ms (%d of %d failed)' \
		"$(cut -d' ' -f1 "$T/rxok" | median)" "$(cut -d' ' -f1 "$T/rxok" | pct 100)" \
		"$(cut -d' ' -f2 "$T/rxok" | median)" "$rx_fails" "$RX_REPS")
fi
echo "1b. through CPython's remote execution ($RX_REPS fresh CPython 3.14 jobs, every thread busy): $rx_line"

# Processes taking turns on CPU 0 in a ring of FIFOs (gpuwork -i/-o), so a
# round's blocks, milliseconds apart, see the same speed of this VM.
# turn NAME NEXT [VAR=VALUE...]: start NAME, which hands over to NEXT; its pid in pid[NAME]
declare -A pid
turn() {
	local name=$1 next=$2
	shift 2
	[ -p "$T/f_$name" ] || mkfifo "$T/f_$name"
	[ -p "$T/f_$next" ] || mkfifo "$T/f_$next"
	env "$@" taskset -c 0 $GW -m rounds -n "$LAUNCHES" -r 1000000000 -i "$T/f_$name" \
		-o "$T/f_$next" >"$T/$name.out" &
	PIDS+=("$!")
	pid[$name]=$!
}
mono_ms() { python3 -c 'import time; print(time.monotonic_ns() // 1000000)'; }
# ratios T_ATTACH T_DETACH REF NAME...: for each NAME, the median over the
# rounds of its round's time per launch (launches and synchronisation: all
# threads of a process share CPU 0, and one process runs at a time, so this
# is its whole CPU time, the stream worker's included) over REF's in the
# same round, before its recording and after it ended, and after / before
# (what going later in a round is worth cancels); one "before after change
# rounds-after" line per NAME
ratios() {
	python3 - "$T" "$@" <<'PY'
import statistics, sys
d, t_attach, t_detach, ref, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
def rounds(name):
    out = {}
    for line in open("%s/%s.out" % (d, name)):
        f = dict(x.split("=") for x in line.split())
        out[int(f["round"])] = (float(f["t_ms"]), float(f["round_ns_per_launch"]))
    return out
r = rounds(ref)
for name in names:
    n = rounds(name)
    both = [(r[i][0], n[i][1] / r[i][1]) for i in n if i in r]
    before = statistics.median(x for t, x in both if t < t_attach - 150)
    after = statistics.median(x for t, x in both if t > t_detach + 200)
    print("%.4f %.4f %.4f %d" % (before, after, after / before,
                                 len([t for t, x in both if t > t_detach + 200])))
PY
}

# 2. per-launch cost after detach: A never attached, B recorded once
turn a b
turn b a
wait_cuda "${pid[a]}"
wait_cuda "${pid[b]}"
printf . >"$T/f_a"
sleep 1.5
t_attach=$(mono_ms)
build/gpubpf record -p "${pid[b]}" -d 1s -q -o "$T/b.json" 2>"$T/b.err"
# after gpubpf has exited: it writes its trace on these same CPUs
t_detach=$(mono_ms)
sleep 2.5
kill "${pid[a]}" "${pid[b]}"
wait "${pid[a]}" "${pid[b]}" 2>/dev/null || true
read -r b_before b_after r1 n_after < <(ratios "$t_attach" "$t_detach" a b)
grep -q '"late_attach"' "$T/b.json" || { echo "inject_bench: B was not late-attached" >&2; exit 1; }
printf '2. time per launch, after detach over never attached, turn by turn (%d rounds of %d launches after): %sx; before the recording %sx; after / before %sx\n' \
	"$n_after" "$LAUNCHES" "$b_after" "$b_before" "$r1"

# 3. after detach with the CUPTI backend: E never attached, F finalized, G
# only unsubscribed
cp build/libgpubpf_cupti.so "$T/"      # away from build/: the simulated driver keeps it
export GPUBPF_CUPTI_LIB="$PWD/build/sim/libcupti_sim.so"
turn e f
turn f g
turn g e GPUBPF_CUPTI_FINALIZE=0
for p in "${pid[e]}" "${pid[f]}" "${pid[g]}"; do wait_cuda "$p"; done
printf . >"$T/f_e"
sleep 1.5
t_attach=$(mono_ms)
build/gpubpf record --cupti-lib "$T/libgpubpf_cupti.so" -p "${pid[f]},${pid[g]}" -d 1s -q \
	-o "$T/fg.json" 2>"$T/fg.err"
t_detach=$(mono_ms)
sleep 2.5
kill "${pid[e]}" "${pid[f]}" "${pid[g]}"
wait "${pid[e]}" "${pid[f]}" "${pid[g]}" 2>/dev/null || true
ratios "$t_attach" "$t_detach" e f g >"$T/fg.ratios"
read -r f_before f_after r3 _ <"$T/fg.ratios"
read -r g_before g_after r4 _ < <(tail -n 1 "$T/fg.ratios")
printf '3. CUPTI backend, time per launch over never attached, after / before the recording: finalized %sx (%s -> %s), only unsubscribed %sx (%s -> %s)\n' \
	"$r3" "$f_before" "$f_after" "$r4" "$g_before" "$g_after"
echo "inject_bench: done in $(( $(date +%s) - start ))s"

[ "$BENCH_MD" = - ] && exit 0
block="$T/block"
{
	echo "<!-- inject-bench:begin (generated by bench/inject_bench.sh) -->"
	echo "### Late attach (record -p on a job started without the library)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- target stall per injection ($INJ_REPS fresh processes): median $(printf %.0f "$s_med") us, p90 $(printf %.0f "$s_p90") us, max $(printf %.0f "$s_max") us ($fails failed)"
	echo "- through CPython's remote execution, for a job in which every thread is busy ($RX_REPS fresh CPython 3.14 jobs spinning in Python): $rx_line"
	echo "- the time per launch (a round's launches and synchronisation; all threads on one CPU, one process at a time) of a process recorded once with \`record -p -d 1s\` (late attach) over that of a process never attached, the two taking turns in rounds of $LAUNCHES launches each, medians over the rounds: ${b_before}x before the recording, ${b_after}x after it ended; **after / before ${r1}x** (goal <= 1.02x)"
	echo "- the same with the shipped library's CUPTI backend (over build/sim/libcupti_sim.so, which stays attached to the driver until cuptiFinalize, as CUPTI does), three processes taking turns, after / before: CUPTI finalized at detach **${r3}x**; only unsubscribed (GPUBPF_CUPTI_FINALIZE=0) ${r4}x"
	echo "<!-- inject-bench:end -->"
} >"$block"
splice_block inject-bench "$block" "$BENCH_MD"
