#!/usr/bin/env bash
# Late attach, section 6 of `make bench` (bench/run.sh), or alone:
# `bash bench/inject_bench.sh`.  On the simulated driver (build/sim), with
# bench/gpuwork in rounds mode (LAUNCHES timed launches per round, 100 ms
# apart), started WITHOUT CUDA_INJECTION64_PATH:
#  1. target stall per injection: INJ_REPS fresh processes, each recorded
#     once with `gpubpf record -p -d 300ms` (which loads the library with
#     ptrace); the borrowed thread's stop, from the trace
#     (gpubpf.gpu.late_attach.PID.stall_us): median, p90, max;
#  2. per-launch cost after detach: A and C (never attached) and B (recorded
#     once with -p for 1 s, then left with the library dormant) run side by
#     side; the launching thread's CPU time per launch, medians over the
#     rounds after B's recording ended (gpubpf exited): B/A, and
#     B after / B before its recording.  Goal: <= 1.02x.  C/A shows the
#     noise of the machine.
#  3. the same with the shipped library's CUPTI backend, over CUPTI's API
#     on the simulated driver (build/sim/libcupti_sim.so, which like CUPTI
#     stays attached to the driver until cuptiFinalize): E never
#     attached, F recorded once and detached (CUPTI finalized from the
#     job's API-exit callback), G recorded once with GPUBPF_CUPTI_FINALIZE=0
#     (only unsubscribed): F/E and G/E after the recording.
# Knobs: INJ_REPS (20), LAUNCHES (20000), ROUNDS (60).  Writes its block
# of BENCHMARKS.md (between the inject-bench markers) unless BENCH_MD=-.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
INJ_REPS=${INJ_REPS:-20}
LAUNCHES=${LAUNCHES:-20000}
ROUNDS=${ROUNDS:-60}
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

# 2. per-launch cost after detach, A and B side by side
$GW -m rounds -n "$LAUNCHES" -r "$ROUNDS" >"$T/a.out" &
a=$!
$GW -m rounds -n "$LAUNCHES" -r "$ROUNDS" >"$T/b.out" &
b=$!
$GW -m rounds -n "$LAUNCHES" -r "$ROUNDS" >"$T/c.out" &
c=$!
PIDS+=("$a" "$b" "$c")
wait_cuda "$b"
sleep 1
mono_ms() { python3 -c 'import time; print(time.monotonic_ns() // 1000000)'; }
t_attach=$(mono_ms)
build/gpubpf record -p "$b" -d 1s -q -o "$T/b.json" 2>"$T/b.err"
# after gpubpf has exited: it writes its trace on these same CPUs
t_detach=$(mono_ms)
wait "$a" "$b" "$c"
# the launching thread's CPU time per launch (wall time swings with the machine's load)
after() { awk -v t0="$2" '{ split($2, a, "="); split($4, c, "="); if (a[2] > t0 + 200) print c[2] }' "$1"; }
before() { awk -v t1="$2" '{ split($2, a, "="); split($4, c, "="); if (a[2] < t1 - 150) print c[2] }' "$1"; }
a_after=$(after "$T/a.out" "$t_detach" | median)
c_after=$(after "$T/c.out" "$t_detach" | median)
b_after=$(after "$T/b.out" "$t_detach" | median)
b_before=$(before "$T/b.out" "$t_attach" | median)
n_after=$(after "$T/b.out" "$t_detach" | wc -l)
r1=$(awk -v x="$b_after" -v y="$a_after" 'BEGIN { printf "%.3f", x / y }')
r2=$(awk -v x="$b_after" -v y="$b_before" 'BEGIN { printf "%.3f", x / y }')
r0=$(awk -v x="$c_after" -v y="$a_after" 'BEGIN { printf "%.3f", x / y }')
printf '2. CPU time per launch after detach (%d rounds of %d launches): never attached %.1f ns, after detach %.1f ns (%sx), same process before its recording %.1f ns (after/before %sx)\n' \
	"$n_after" "$LAUNCHES" "$a_after" "$b_after" "$r1" "$b_before" "$r2"
printf '   noise: a second process never attached, same rounds: %.1f ns (%sx the first)\n' "$c_after" "$r0"

# 3. after detach with the CUPTI backend: finalized (F), only unsubscribed (G)
cp build/libgpubpf_cupti.so "$T/"      # away from build/: the simulated driver keeps it
export GPUBPF_CUPTI_LIB="$PWD/build/sim/libcupti_sim.so"
$GW -m rounds -n "$LAUNCHES" -r "$ROUNDS" >"$T/e.out" &
e=$!
$GW -m rounds -n "$LAUNCHES" -r "$ROUNDS" >"$T/f.out" &
f=$!
GPUBPF_CUPTI_FINALIZE=0 $GW -m rounds -n "$LAUNCHES" -r "$ROUNDS" >"$T/g.out" &
g=$!
PIDS+=("$e" "$f" "$g")
wait_cuda "$f"
wait_cuda "$g"
sleep 1
build/gpubpf record --cupti-lib "$T/libgpubpf_cupti.so" -p "$f,$g" -d 1s -q \
	-o "$T/fg.json" 2>"$T/fg.err"
t_detach=$(mono_ms)
wait "$e" "$f" "$g"
e_after=$(after "$T/e.out" "$t_detach" | median)
f_after=$(after "$T/f.out" "$t_detach" | median)
g_after=$(after "$T/g.out" "$t_detach" | median)
r3=$(awk -v x="$f_after" -v y="$e_after" 'BEGIN { printf "%.3f", x / y }')
r4=$(awk -v x="$g_after" -v y="$e_after" 'BEGIN { printf "%.3f", x / y }')
printf '3. CUPTI backend, CPU time per launch after detach: never attached %.1f ns, finalized %.1f ns (%sx), only unsubscribed %.1f ns (%sx)\n' \
	"$e_after" "$f_after" "$r3" "$g_after" "$r4"
echo "inject_bench: done in $(( $(date +%s) - start ))s"

[ "$BENCH_MD" = - ] && exit 0
block="$T/block"
{
	echo "<!-- inject-bench:begin (generated by bench/inject_bench.sh) -->"
	echo "### Late attach (record -p on a job started without the library)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- target stall per injection ($INJ_REPS fresh processes): median $(printf %.0f "$s_med") us, p90 $(printf %.0f "$s_p90") us, max $(printf %.0f "$s_max") us ($fails failed)"
	echo "- launching thread CPU time per launch after detach, side by side with a process never attached: $(printf %.1f "$b_after") ns vs $(printf %.1f "$a_after") ns (${r1}x); the same process before its recording: $(printf %.1f "$b_before") ns (${r2}x); goal <= 1.02x; noise: two processes never attached differ by ${r0}x"
	echo "- the same after detach with the shipped library's CUPTI backend (over build/sim/libcupti_sim.so, which stays attached to the driver until cuptiFinalize, as CUPTI does): never attached $(printf %.1f "$e_after") ns; CUPTI finalized at detach $(printf %.1f "$f_after") ns (${r3}x); only unsubscribed (GPUBPF_CUPTI_FINALIZE=0) $(printf %.1f "$g_after") ns (${r4}x)"
	echo "<!-- inject-bench:end -->"
} >"$block"
splice_block inject-bench "$block" "$BENCH_MD"
