#!/usr/bin/env bash
# Thread states and the CPU sampler: their costs, section 9 of `make bench`
# (bench/run.sh), or alone: `bash bench/sched_bench.sh`.  REPS repetitions,
# modes interleaved, medians:
#  - per context switch: two threads handing a byte to each other over
#    pipes on one CPU (bench/pingpong.c): untraced, gpubpf without thread
#    states, gpubpf with them;
#  - a launch-heavy loop (bench/stackcost.py, depth 10, LOOP_N launches of
#    the bench libcuda; the job's wall time for them and the thread's CPU
#    time per launch): untraced, gpubpf --no-states --sample-hz 0, gpubpf
#    at the default (states, 1000 Hz): the slowdown states and samples add;
#  - two CPU-bound Python threads (bench/busy.py) recorded with -p for
#    REC_S seconds, --sample-hz 1000 and 0: the recorder's CPU time, and
#    the BPF programs' run time per run (kernel.bpf_stats_enabled).
# Writes its block of BENCHMARKS.md (between the sched-bench markers)
# unless BENCH_MD=-.  Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REPS=${REPS:-5}
PP_N=${PP_N:-50000}
LOOP_N=${LOOP_N:-400000}
REC_S=${REC_S:-4}
BENCH_MD=${BENCH_MD:-BENCHMARKS.md}
PYTHON=${PYTHON:-python3}
LIBDIR=${LIBDIR:-build/bench/push}
export LD_LIBRARY_PATH="$PWD/$LIBDIR"
GB=(build/gpubpf record -q --no-device --libcuda "$LIBDIR/libcuda.so.1")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
raw() { awk -v k="$1" '$1 == k { print $2 }' "$T/raw" | median -; }
range() { awk -v k="$1" '$1 == k { print $2 }' "$T/raw" | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ / to /'; }
# ns pid has spent on a CPU so far, all its threads
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

pingpong() { # mode -> ns per switch
	local cmd=(taskset -c 0 build/bench/pingpong "$PP_N")
	case $1 in
	untraced) "${cmd[@]}" ;;
	nostates) "${GB[@]}" --no-states --sample-hz 0 -o "$T/t.json" -- "${cmd[@]}" 2>/dev/null ;;
	states) "${GB[@]}" --sample-hz 0 -o "$T/t.json" -- "${cmd[@]}" 2>/dev/null ;;
	esac | sed -n 's/^ns_per_switch=//p'
}

loop() { # mode -> "WALL CPU": the job's wall ns and its thread's CPU ns per launch
	local cmd=("$PYTHON" bench/stackcost.py 10 "$LOOP_N")
	case $1 in
	untraced) "${cmd[@]}" ;;
	off) "${GB[@]}" --no-states --sample-hz 0 -o "$T/t.json" -- "${cmd[@]}" 2>/dev/null ;;
	default) "${GB[@]}" -o "$T/t.json" -- "${cmd[@]}" 2>/dev/null ;;
	esac | awk -F= '$1 == "ns_per_call" { w = $2 } $1 == "cpu_ns_per_call" { c = $2 }
			END { print w, c }'
}

# "name=ns/run" of the scheduler and sampler programs (bpftool fails when
# a program of another job goes while it lists them: then 1)
progstats() {
	bpftool -j prog show 2>/dev/null | "$PYTHON" -c '
import json, sys
out = ["%s=%.0f" % (p["name"], p["run_time_ns"] / p["run_cnt"]) for p in json.load(sys.stdin)
       if p.get("name") in ("gb_switch", "gb_wakeup", "gb_sample") and p.get("run_cnt")]
print(" ".join(out), end=" ")
sys.exit(not out)' 2>/dev/null
}

# busy.py recorded with -p at hz: the recorder's CPU ms per second over
# REC_S - 2 seconds of its steady state (start and trace writing apart),
# and "name=ns/run" of the scheduler and sampler programs
busy() { # hz
	local w g t0 t1
	"$PYTHON" bench/busy.py 2 $((REC_S + 3)) &
	w=$!
	until grep -q libcuda "/proc/$w/maps" 2>/dev/null; do sleep 0.05; done
	"${GB[@]}" --sample-hz "$1" -p "$w" -d "${REC_S}s" -o "$T/b.json" 2>/dev/null &
	g=$!
	sleep 1
	t0=$(cpu_ns "$g")
	sleep $((REC_S - 2))
	t1=$(cpu_ns "$g")
	awk -v a="$t0" -v b="$t1" -v s=$((REC_S - 2)) \
		'BEGIN { printf "cpu_ms_per_s=%.2f ", (b - a) / 1e6 / s }'
	progstats || progstats
	wait "$g"
	kill "$w" 2>/dev/null
	wait "$w" 2>/dev/null || true
}

old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled='"$old_stats"'; rm -rf "$T"' EXIT
start=$(date +%s)
for rep in $(seq "$REPS"); do
	for m in untraced nostates states; do
		v=$(pingpong $m)
		echo "pp_$m $v" >>"$T/raw"
		echo "rep $rep pingpong $m: $v ns/switch"
	done
	for m in untraced off default; do
		read -r w v <<<"$(loop $m)"
		eval "l_$m=$v w_$m=$w"
		echo "loop_$m $v" >>"$T/raw"
		echo "wall_$m $w" >>"$T/raw"
		echo "rep $rep launch loop $m: $w wall ns/launch, $v CPU ns/launch"
	done
	# this repetition's slowdowns, default against off and against untraced, in %
	pct() { awk -v d="$1" -v o="$2" 'BEGIN { printf "%.1f", (d / o - 1) * 100 }'; }
	echo "loop_pct $(pct "$l_default" "$l_off")" >>"$T/raw"
	echo "wall_pct $(pct "$w_default" "$w_off")" >>"$T/raw"
	echo "wall_pct_untraced $(pct "$w_default" "$w_untraced")" >>"$T/raw"
	for hz in 1000 0; do
		out=$(busy $hz | tr '\n' ' ')
		echo "rep $rep busy threads, --sample-hz $hz: $out"
		for kv in $out; do
			echo "busy${hz}_${kv%%=*} ${kv#*=}" >>"$T/raw"
		done
	done
done

block() {
	local u n s lu lo ld
	u=$(raw pp_untraced) n=$(raw pp_nostates) s=$(raw pp_states)
	lu=$(raw loop_untraced) lo=$(raw loop_off) ld=$(raw loop_default) lp=$(raw loop_pct)
	wu=$(raw wall_untraced) wo=$(raw wall_off) wd=$(raw wall_default) wp=$(raw wall_pct)
	echo "<!-- sched-bench:begin (generated by bench/sched_bench.sh; edit outside these markers) -->"
	echo "### Thread states and CPU samples: costs"
	echo
	echo "- command: \`bash bench/sched_bench.sh\` (part of \`make bench\`), as root"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs (shared with other jobs); load average $(cut -d' ' -f1-3 /proc/loadavg); $($PYTHON -V 2>&1)"
	echo "- $REPS repetitions, modes interleaved, medians; took $(($(date +%s) - start)) s"
	echo
	echo "Per context switch of a traced thread: $PP_N round trips of two threads over pipes, both on CPU 0 (bench/pingpong.c); each hand-off is one switch (a switch-out and a switch-in record) and one wakeup record."
	echo
	echo "| untraced ns/switch | gpubpf --no-states | gpubpf with states | states add |"
	echo "|---:|---:|---:|---:|"
	awk -v u="$u" -v n="$n" -v s="$s" 'BEGIN { printf "| %.0f | %.0f | %.0f | **%.0f ns** (%.2fx) |\n", u, n, s, s - n, s / n }'
	echo
	echo "A launch-heavy loop: $LOOP_N cuLaunchKernel calls from Python at stack depth 10 (bench/stackcost.py, $LIBDIR). The traced job's slowdown: its wall time for the loop (time.perf_counter_ns in the job, so the recorder's start and the trace's writing are not in it), per launch."
	echo
	echo "| untraced wall ns/launch | gpubpf --no-states --sample-hz 0 | gpubpf default (states, 1000 Hz) | slowdown from states and samples: median of the repetitions' (range) | default against untraced |"
	echo "|---:|---:|---:|---:|---:|"
	echo "| $wu | $wo | $wd | **$wp%** ($(range wall_pct)%) | $(raw wall_pct_untraced)% |"
	echo
	echo "The same loop in CPU time of the calling thread per launch (time.thread_time_ns: what the probes and the sampler take from it, less the wall-clock noise of other jobs on these CPUs)."
	echo
	echo "| untraced CPU ns/launch | gpubpf --no-states --sample-hz 0 | gpubpf default (states, 1000 Hz) | slowdown from states and samples: median of the repetitions' (range) |"
	echo "|---:|---:|---:|---:|"
	echo "| $lu | $lo | $ld | **$lp%** ($(range loop_pct)%) |"
	echo
	echo "Where the range is wider than the 2% goal, these CPUs are too busy with other jobs to resolve it from runs: the sampler's run time below bounds its share."
	echo
	echo "Two CPU-bound Python threads (bench/busy.py, stack depth 10) recorded with -p for $REC_S s: the recorder's CPU (user + system, ms per second, over the $((REC_S - 2)) s of steady state between its start and the writing of the trace, from /proc/PID/task/*/schedstat), and the BPF programs' mean run time (kernel.bpf_stats_enabled; gb_sample runs on every CPU-clock tick of every CPU, traced thread or not)."
	echo
	echo "| --sample-hz | recorder CPU ms/s | gb_sample ns/run | gb_switch ns/run | gb_wakeup ns/run |"
	echo "|---:|---:|---:|---:|---:|"
	for hz in 1000 0; do
		echo "| $hz | $(raw busy${hz}_cpu_ms_per_s) | $(raw busy${hz}_gb_sample) | $(raw busy${hz}_gb_switch) | $(raw busy${hz}_gb_wakeup) |"
	done
	echo
	awk -v n="$(raw busy1000_gb_sample)" 'BEGIN { printf "At 1000 Hz a thread on a CPU gives the sampler about %.0f ns each millisecond: **%.2f%%** of its time, whatever it runs (the share of the sampler in any slowdown, without the noise of wall-clock runs on a shared machine).\n", n, n / 1e4 }'
	echo
	echo "<!-- sched-bench:end -->"
}
block | tee "$T/block"
[ "$BENCH_MD" = - ] || splice_block sched-bench "$T/block" "$BENCH_MD"
