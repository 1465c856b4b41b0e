#!/bin/bash
# bench/run.sh - gpubpf benchmarks (`make bench`); see BENCHMARKS.md.
#
# 1. cost per traced call: untraced vs an empty uprobe (+uretprobe) vs gpubpf
#    record -p, interleaved across repetitions, medians;
# 2. collector decode and Chrome-trace export throughput (one thread);
# 3. highest sustained call rate gpubpf records with zero lost events, on the
#    single-stepped stub and at full speed on the emulated push entry;
# 4. GPU timing on the simulated driver (bench/gpuwork.c): per-launch cost
#    against host uprobes alone, dormant library, GPU records/s with zero
#    loss (`bash bench/run.sh gpu` runs only this one; knobs in gpu_section);
# 5. Python stack walk cost at depths 1, 10, 30, 60, and 30 across a page
#    of the data stack (bench/stack_bench.sh);
# 6. late attach: target stall per injection, per-launch cost after detach
#    against a process never attached (bench/inject_bench.sh);
# 7. cost per call by the probed entry's first instruction
#    (bench/prologue_bench.sh);
# 8. trace size and export time, .pftrace against JSON, of a synthetic 60 s
#    capture at 25k calls/s with 30-frame stacks (bench/pftrace_bench.sh).
# 9. thread states and CPU samples: per context switch, per sample, the
#    recorder's CPU at 1 kHz, a launch loop's slowdown (bench/sched_bench.sh).
# 10. the wake hook of attributed stacks: per wakeup it returns from at once,
#    per Python-to-worker hand-over (bench/wake_bench.sh).
# 11. recording memory against recording length, --memory 64M against
#    everything held (bench/memory_bench.sh).
# 12. converting a large trace, --memory 64M against everything held
#    (bench/convert_bench.sh).
# 13. a launch loop's slowdown from thread states and samples, measured on
#    one job recorded alternately without and with them
#    (bench/slowdown_bench.sh).
# 14. record --autograd: the libtorch probes' cost per hit, on a CPU
#    PyTorch loop (bench/autograd_bench.sh).
# 15. what one BPF helper call costs on this machine (the clock, a user
#    memory read, a map lookup, a bpf_loop turn...), and the calls of the
#    entry program and of the Python walk priced with them
#    (bench/helper_bench.sh).
# 16. the code-free hook: a walked process's cost per code object it frees
#    (bench/codefree_bench.sh).
#
# Prints tables and splices them into BENCHMARKS.md between the
# "<!-- bench:begin -->" / "<!-- bench:end -->" markers (appended if absent).
# Knobs (environment): COST_REPS (7), COST_N (30000 traced calls per run),
# UNTRACED_N (5000000), COLL_N (2000000), COLL_REPS (3), RATE_REPS (3),
# RATE_SECS (3), RATE_LIST ("10000 20000 50000 100000 0"; 0 = unlimited),
# PUSH_RATES (1000000: the push entry's, before its unlimited one),
# BENCH_MD (BENCHMARKS.md; "-" to leave it alone).  Needs root.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh

B=build/bench
LIB=$B/libcuda.so.1
GPUBPF=build/gpubpf
COST_REPS=${COST_REPS:-7}
COST_N=${COST_N:-30000}
UNTRACED_N=${UNTRACED_N:-5000000}
COLL_N=${COLL_N:-2000000}
COLL_REPS=${COLL_REPS:-3}
RATE_REPS=${RATE_REPS:-3}
RATE_SECS=${RATE_SECS:-3}
RATE_LIST=${RATE_LIST:-"10000 20000 50000 100000 0"}
PUSH_RATES=${PUSH_RATES:-1000000}
BENCH_MD=${BENCH_MD:-BENCHMARKS.md}

# (section 4 alone checks its own files)
[ "${1:-}" = gpu ] || for f in $LIB $B/callcost $B/empty_uprobe $B/collector_bench $GPUBPF; do
	[ -e "$f" ] || { echo "bench: $f missing (run make bench)" >&2; exit 1; }
done
if [ "$(id -u)" != 0 ]; then
	echo "bench: needs root (uprobes)" >&2
	exit 1
fi

T=$(mktemp -d /tmp/gpubpf-bench.XXXXXX)
HELPERS=()
cleanup() {
	for p in "${HELPERS[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
START=$(date +%s)
LOAD0=$(cut -d" " -f1-3 /proc/loadavg)

kv() { tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }
# "events=N dropped=M" from the stderr of a `gpubpf record` (its summary
# line, "gpubpf: N events, M dropped, written to FILE"), nothing when it
# has none.  Every record here runs with -q, stdout elsewhere: its report
# must never reach the lines parsed below.
rec_summary() {
	tr '\r' '\n' < "$1" | sed -n 's/^gpubpf: \([0-9][0-9]*\) events, \([0-9][0-9]*\) dropped, written to .*/events=\1 dropped=\2/p' | tail -n 1
}
# a calls/s value, or "none" (not a number) as it is
rate_fmt() { case $1 in *[!0-9.]* | '') echo "$1" ;; *) printf %.0f "$1" ;; esac; }

# Attach the empty uprobe to callcost ($SIDE_PID, from side_start) and wait
# until both links are in place (perf-event uprobes plant the int3 before the
# program is attached, so -w alone is not enough); sets TP.
start_empty() { # symbol [-r]
	local tr=$T/empty.out
	: > $tr
	$B/empty_uprobe -p "$SIDE_PID" -l ${ELIB:-$LIB} -f "$@" > $tr 2>&1 &
	TP=$!
	HELPERS+=($TP)
	for _ in $(seq 1000); do grep -q '^attached' $tr && return; kill -0 $TP 2>/dev/null || break; sleep 0.01; done
	echo "bench: empty_uprobe did not attach" >&2; cat $tr >&2; exit 1
}

# one_cost MODE: run callcost once under MODE, print its key=value line
# (gpubpf modes add events= and dropped= from the summary line).
one_cost() {
	local mode=$1 func out=$T/cc.rows tr=$T/tracer.err
	case $mode in *launch*) func=launch ;; *) func=sync ;; esac
	local sym=cuLaunchKernel; [ $func = sync ] && sym=cuStreamSynchronize
	case $mode in
	untraced_*)
		$B/callcost -f $func -n "$UNTRACED_N"
		return ;;
	empty_*)
		side_start $T/cc $B/callcost -w -f $func -n "$COST_N" || exit 1
		local ropt=; [ "$mode" = empty_ret_sync ] && ropt=-r
		start_empty $sym $ropt
		kill -USR1 "$SIDE_PID"
		wait "$SIDE_JOB"
		stop_jobs $TP
		cat $out ;;
	gpubpf_*)
		side_start $T/cc $B/callcost -w -f $func -n "$COST_N" || exit 1
		$GPUBPF record -q --libcuda $LIB -p "$SIDE_PID" -o $T/trace.json > /dev/null 2> "$tr" &
		local tp=$!
		HELPERS+=($tp)
		kill -USR1 "$SIDE_PID"
		wait "$SIDE_JOB"
		stop_jobs $tp
		echo "$(grep -m1 '^func=' $out) $(rec_summary "$tr")" ;;
	esac
}

hr() { printf '%s\n' "$1"; }

###########################################################################
# 4. GPU timing (bench/gpuwork.c on the simulated driver, build/sim) -------
# Begin of section 4 (`bash bench/run.sh gpu` runs it alone).  Knobs:
# GPU_REPS (7), GPU_N (20000 launches under gpubpf), GPU_UNTRACED_N (200000),
# GRAPH_K (1000 kernels per graph), GRAPH_R_LIST ("100 500 1000" replays),
# GRAPH_REPS (3), LOSS_BUF (256K: a small ring buffer for the loss-accounting
# check), GPU_GPUBPF ($GPUBPF: the gpubpf binary to record with).  Writes its own block between "<!-- gpu-bench:begin -->" and
# "<!-- gpu-bench:end -->" in $BENCH_MD.
gpu_section() {
	local GW=$B/gpuwork SIMDIR=build/sim INJ=$PWD/build/sim/libgpubpf_cupti.so
	local GPU_REPS=${GPU_REPS:-7} GPU_N=${GPU_N:-20000} GPU_UNTRACED_N=${GPU_UNTRACED_N:-200000}
	local GRAPH_K=${GRAPH_K:-1000} GRAPH_R_LIST=${GRAPH_R_LIST:-"100 500 1000"}
	local GRAPH_REPS=${GRAPH_REPS:-3} LOSS_BUF=${LOSS_BUF:-256K}
	local g_start=$(date +%s) f GB=${GPU_GPUBPF:-$GPUBPF}
	for f in $GW $SIMDIR/libcuda.so.1 $INJ $GB; do
		[ -e "$f" ] || { echo "bench: $f missing (run make all bench-bins)" >&2; return 1; }
	done
	# one_gpu OPTS -- gpuwork-args: run gpuwork (under gpubpf record OPTS
	# unless OPTS is "untraced" or "dormant"); prints gpuwork's line plus
	# events= dropped= gpu_dropped= kernel_events= for recorded runs
	one_gpu() {
		local how=$1 tr=$T/gw.json
		shift 2
		case $how in
		untraced) env -u CUDA_INJECTION64_PATH LD_LIBRARY_PATH=$SIMDIR $GW "$@" ;;
		dormant) CUDA_INJECTION64_PATH=$INJ LD_LIBRARY_PATH=$SIMDIR $GW "$@" ;;
		*)	# how: gpubpf record options, comma separated
			env -u CUDA_INJECTION64_PATH LD_LIBRARY_PATH=$SIMDIR $GB record -q ${how//,/ } \
				-o $tr -- $GW "$@" > $T/gw.out 2> $T/gw.err
			local hdr; hdr=$(head -c 2000 $tr 2>/dev/null | head -1)
			echo "$(grep -m1 '^mode=' $T/gw.out) $(rec_summary $T/gw.err)" \
			     "dropped_total=$(echo "$hdr" | sed -n 's/.*"dropped_total":\([0-9]*\).*/\1/p')" \
			     "gpu_dropped=$(echo "$hdr" | sed -n 's/.*"gpu":{"dropped_events":{\([^}]*\)}.*/\1/p' | tr ',' '\n' | awk -F: '{ s += $2 } END { print s + 0 }')" \
			     "kernel_events=$(grep -c '"cat":"kernel"' $tr 2>/dev/null)"
			rm -f $tr ;;
		esac
	}
	gv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }'; }

	echo "== 4a. per-launch cost with GPU timing (gpuwork -m launch, medians of $GPU_REPS interleaved repetitions) =="
	local GMODES="untraced dormant host host_gated gpu gpu_gated" m rep line
	declare -A GOPT=([untraced]=untraced [dormant]=dormant [host]=--no-device [host_gated]=--no-device
		[gpu]=--buffer-size,16M [gpu_gated]=--buffer-size,16M)
	GPU_ISSUES=
	for rep in $(seq "$GPU_REPS"); do
		for m in $GMODES; do
			local n=$GPU_N g=
			case $m in untraced|dormant) n=$GPU_UNTRACED_N ;; esac
			case $m in *_gated) g=-g ;; esac
			line=$(one_gpu ${GOPT[$m]} -- -m launch -n $n $g)
			echo "$line" >> $T/gpu.$m
			printf '  rep %d %-10s %s\n' $rep $m "$line"
			case $m in gpu*)
				[ "$(echo "$line" | gv kernel_events)" = "$(echo "$line" | gv kernels)" ] &&
				[ "$(echo "$line" | gv dropped)" = 0 ] && [ "$(echo "$line" | gv gpu_dropped)" = 0 ] ||
					GPU_ISSUES+="$m rep $rep: kernels=$(echo "$line" | gv kernels) kernel events=$(echo "$line" | gv kernel_events) dropped=$(echo "$line" | gv dropped) gpu dropped=$(echo "$line" | gv gpu_dropped); " ;;
			esac
		done
	done
	declare -A GNS
	for m in $GMODES; do GNS[$m]=$(gv ns_per_launch < $T/gpu.$m | median); done
	# paired per-repetition differences and ratios, medians
	pair() { # op a b -> median over reps of a op b
		paste -d' ' <(gv ns_per_launch < $T/gpu.$2) <(gv ns_per_launch < $T/gpu.$3) |
			awk -v op=$1 '{ if (op == "-") printf "%.1f\n", $1 - $2; else printf "%.4f\n", $1 / $2 }' | median
	}
	local R_GH=$(printf %.2f $(pair / gpu host)) R_DU=$(printf %.3f $(pair / dormant untraced)) D_GH=$(pair - gpu host)
	local D_GHg=$(pair - gpu_gated host_gated) D_HHg=$(pair - host host_gated) D_GGg=$(pair - gpu gpu_gated)
	{
	hr "| mode | command | ns/launch (median) | per-rep values |"
	hr "|---|---|---:|---|"
	hr "| untraced | \`gpuwork -m launch -n $GPU_UNTRACED_N\` | ${GNS[untraced]} | $(gv ns_per_launch < $T/gpu.untraced | paste -sd' ') |"
	hr "| dormant library (CUDA_INJECTION64_PATH set, nobody recording) | \`CUDA_INJECTION64_PATH=build/sim/libgpubpf_cupti.so gpuwork ...\` | ${GNS[dormant]} | $(gv ns_per_launch < $T/gpu.dormant | paste -sd' ') |"
	hr "| host uprobes alone | \`gpubpf record --no-device -- gpuwork -m launch -n $GPU_N\` | ${GNS[host]} | $(gv ns_per_launch < $T/gpu.host | paste -sd' ') |"
	hr "| GPU timing on (uprobes + correlation marker + GPU records) | \`gpubpf record -- gpuwork -m launch -n $GPU_N\` | ${GNS[gpu]} | $(gv ns_per_launch < $T/gpu.gpu | paste -sd' ') |"
	hr "| host uprobes alone, gated (worker held: no kernel runs during the loop) | \`gpubpf record --no-device -- gpuwork -g ...\` | ${GNS[host_gated]} | $(gv ns_per_launch < $T/gpu.host_gated | paste -sd' ') |"
	hr "| GPU timing on, gated (marker only: no record published during the loop) | \`gpubpf record -- gpuwork -g ...\` | ${GNS[gpu_gated]} | $(gv ns_per_launch < $T/gpu.gpu_gated | paste -sd' ') |"
	hr ""
	hr "Medians over repetitions of paired (same repetition) values:"
	hr ""
	hr "- GPU timing on / host uprobes alone: **${R_GH}x**; difference **${D_GH} ns/launch** (ratio of medians $(awk -v a=${GNS[gpu]} -v b=${GNS[host]} 'BEGIN { printf "%.2f", a / b }')x)"
	hr "- dormant / untraced: **${R_DU}x** (difference of medians $(awk -v a=${GNS[dormant]} -v b=${GNS[untraced]} 'BEGIN { printf "%.1f", a - b }') ns/launch)"
	hr "- the correlation marker alone (gated GPU-on − gated host-only): **${D_GHg} ns/launch**"
	hr "- GPU-on − gated GPU-on (the stream worker running kernels and publishing records on the other CPU while the loop runs): ${D_GGg} ns/launch; host-only − gated host-only (the worker running kernels, no publishing): ${D_HHg} ns/launch"
	} > $T/table4a
	cat $T/table4a
	[ -n "$GPU_ISSUES" ] && echo "  WARNING: GPU records lost or miscounted: $GPU_ISSUES"

	echo "== 4b. GPU records/s through the transport (gpuwork -m graph -k $GRAPH_K, $GRAPH_REPS reps) =="
	local r ok best=none first_loss=
	{
	hr "| records (K x R) | records/s, launch+sync loop (median) | launch+sync ms (median) | kernel events / kernels (each rep) | dropped: BPF total, GPU (each rep) | zero loss |"
	hr "|---:|---:|---:|---|---|---|"
	} > $T/table4b
	for r in $GRAPH_R_LIST; do
		: > $T/graph.$r
		for rep in $(seq "$GRAPH_REPS"); do
			line=$(one_gpu --buffer-size,16M -- -m graph -k $GRAPH_K -r $r)
			echo "$line" >> $T/graph.$r
			printf '  K=%d R=%d rep %d: %s\n' $GRAPH_K $r $rep "$line"
		done
		ok=$(awk '{ k = e = d = g = ""; for (i = 1; i <= NF; i++) { split($i, a, "=")
			if (a[1] == "kernels") k = a[2]; if (a[1] == "kernel_events") e = a[2]
			if (a[1] == "dropped_total") d = a[2]; if (a[1] == "gpu_dropped") g = a[2] }
			if (k == "" || e != k || d != "0" || g != "0") bad = 1 } END { print bad ? "no" : "yes" }' $T/graph.$r)
		local rps; rps=$(gv records_per_s < $T/graph.$r | median)
		[ $ok = yes ] && best="$((GRAPH_K * r)) records at $(printf %.0f $rps) records/s"
		[ $ok = no ] && [ -z "$first_loss" ] && first_loss="$((GRAPH_K * r)) records at $(printf %.0f $rps) records/s"
		hr "| $((GRAPH_K * r)) ($GRAPH_K x $r) | $(printf %.0f $rps) | $(gv total_ms < $T/graph.$r | median) | $(paste -d/ <(gv kernel_events < $T/graph.$r) <(gv kernels < $T/graph.$r) | paste -sd' ') | $(paste -d, <(gv dropped_total < $T/graph.$r) <(gv gpu_dropped < $T/graph.$r) | paste -sd' ') | $ok |" >> $T/table4b
	done
	# untraced reference, and loss accounting with a small ring buffer
	: > $T/graph.ref
	for rep in $(seq "$GRAPH_REPS"); do one_gpu untraced -- -m graph -k $GRAPH_K -r 500 >> $T/graph.ref; done
	hr "| $((GRAPH_K * 500)) untraced (reference) | $(printf %.0f $(gv records_per_s < $T/graph.ref | median)) | $(gv total_ms < $T/graph.ref | median) | – | – | – |" >> $T/table4b
	line=$(one_gpu --buffer-size,$LOSS_BUF -- -m graph -k $GRAPH_K -r 300)
	echo "  loss check, --buffer-size $LOSS_BUF: $line"
	local lk=$(echo "$line" | gv kernels) le=$(echo "$line" | gv kernel_events)
	{
	hr ""
	hr "Zero loss at the default 16 MiB ring buffer: largest run ${best}$([ -n "$first_loss" ] && echo "; first loss: $first_loss")."
	hr ""
	hr "Loss accounting check (\`gpubpf record --buffer-size $LOSS_BUF -- gpuwork -m graph -k $GRAPH_K -r 300\`): kernels $lk, kernel events $le (missing $((lk - le))); reported: summary dropped=$(echo "$line" | gv dropped), dropped_total=$(echo "$line" | gv dropped_total), gpu.dropped_events=$(echo "$line" | gv gpu_dropped)."
	} >> $T/table4b
	cat $T/table4b
	local g_el=$(( $(date +%s) - g_start ))
	echo "bench: GPU section done in ${g_el}s"
	[ "$BENCH_MD" = - ] && return 0
	{
	echo "<!-- gpu-bench:begin (generated by bench/run.sh section 4; edit outside these markers) -->"
	echo "### 4. GPU timing: per-launch cost and records/s (simulated driver)"
	echo
	echo "- command: \`make bench\` (section 4 alone: \`bash bench/run.sh gpu\`), as root; LD_LIBRARY_PATH=build/sim"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel: $(uname -sr); $(nproc) CPUs; load average at start of the section: $G_LOAD0"
	echo "- gpubpf: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- user bpf cupti sim 2>/dev/null || echo ' + uncommitted changes in user/ bpf/ cupti/ sim/')$([ "$GB" != "$GPUBPF" ] && echo "; recorded with $GB (GPU_GPUBPF)")"
	echo "- knobs: GPU_REPS=$GPU_REPS GPU_N=$GPU_N GPU_UNTRACED_N=$GPU_UNTRACED_N GRAPH_K=$GRAPH_K GRAPH_R_LIST=\"$GRAPH_R_LIST\" GRAPH_REPS=$GRAPH_REPS LOSS_BUF=$LOSS_BUF; took ${g_el}s"
	echo
	echo "#### 4a. Per-launch cost (cuLaunchKernel of a 0-µs kernel on a stream)"
	echo
	cat $T/table4a
	echo
	[ -n "$GPU_ISSUES" ] && { echo "**GPU records lost or miscounted:** $GPU_ISSUES"; echo; }
	echo "#### 4b. GPU records per second through the transport (graph replays of $GRAPH_K 0-µs kernels)"
	echo
	cat $T/table4b
	echo "<!-- gpu-bench:end -->"
	} > $T/gblock
	splice_block gpu-bench "$T/gblock" "$BENCH_MD"
	echo "bench: GPU results written to $BENCH_MD"
}
G_LOAD0=$(cut -d" " -f1-3 /proc/loadavg)
if [ "${1:-}" = gpu ]; then
	gpu_section
	exit $?
fi
# End of section 4's definition (it runs after section 3, below) ----------

###########################################################################
echo "== 1. cost per call (medians of $COST_REPS interleaved repetitions) =="
MODES="untraced_launch untraced_sync empty_launch empty_sync empty_ret_sync gpubpf_launch gpubpf_sync"
for rep in $(seq "$COST_REPS"); do
	for m in $MODES; do
		line=$(one_cost $m)
		echo "$line" >> $T/cost.$m
		printf '  rep %d %-16s %s\n' "$rep" "$m" "$line"
	done
done
declare -A NS
for m in $MODES; do
	NS[$m]=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^ns_per_call=/) print substr($i, 13) }' $T/cost.$m | median)
done
GB_ISSUES=
for m in gpubpf_launch gpubpf_sync; do
	while read -r l; do
		c=$(echo "$l" | kv calls); e=$(echo "$l" | kv events); d=$(echo "$l" | kv dropped)
		[ "$e" = "$c" ] && [ "$d" = 0 ] || GB_ISSUES+="$m: calls=$c events=${e:-?} dropped=${d:-?}; "
	done < $T/cost.$m
done
# median over repetitions of the paired ratio (a_i - ua_i) / (b_i - ub_i)
paired() { # gpubpf-mode empty-mode untraced-mode
	paste -d' ' <(nsc $T/cost.$1) <(nsc $T/cost.$2) <(nsc $T/cost.$3) |
		awk '{ printf "%.4f\n", ($1 - $3) / ($2 - $3) }' | median
}
nsc() { awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^ns_per_call=/) print substr($i, 13) }' "$1"; }
ovh() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a - b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
O_EL=$(ovh ${NS[empty_launch]} ${NS[untraced_launch]})
O_ES=$(ovh ${NS[empty_sync]} ${NS[untraced_sync]})
O_ER=$(ovh ${NS[empty_ret_sync]} ${NS[untraced_sync]})
O_GL=$(ovh ${NS[gpubpf_launch]} ${NS[untraced_launch]})
O_GS=$(ovh ${NS[gpubpf_sync]} ${NS[untraced_sync]})
{
hr "| mode | function | probes | ns/call (median) | overhead ns/call | gpubpf / empty (ratio of medians) | gpubpf / empty (median of per-rep ratios) |"
hr "|---|---|---|---:|---:|---:|---:|"
hr "| untraced | cuLaunchKernel | none | ${NS[untraced_launch]} | – | | |"
hr "| untraced | cuStreamSynchronize | none | ${NS[untraced_sync]} | – | | |"
hr "| empty BPF | cuLaunchKernel | uprobe | ${NS[empty_launch]} | $O_EL | | |"
hr "| empty BPF | cuStreamSynchronize | uprobe | ${NS[empty_sync]} | $O_ES | | |"
hr "| empty BPF | cuStreamSynchronize | uprobe + uretprobe | ${NS[empty_ret_sync]} | $O_ER | | |"
hr "| gpubpf record -p | cuLaunchKernel | entry only | ${NS[gpubpf_launch]} | $O_GL | **$(ratio $O_GL $O_EL)x** (vs empty uprobe) | $(printf %.2f $(paired gpubpf_launch empty_launch untraced_launch))x |"
hr "| gpubpf record -p | cuStreamSynchronize | entry + return | ${NS[gpubpf_sync]} | $O_GS | **$(ratio $O_GS $O_ER)x** (vs empty uprobe + uretprobe) | $(printf %.2f $(paired gpubpf_sync empty_ret_sync untraced_sync))x |"
} > $T/table1
cat $T/table1
[ -n "$GB_ISSUES" ] && echo "  WARNING: gpubpf lost or miscounted events: $GB_ISSUES"

# BPF run time per hit (kernel.bpf_stats_enabled), a low-noise view of what
# the programs themselves cost: progs loaded after the snapshot whose
# run_cnt equals the calls made (other jobs' programs never match exactly).
STATS_N=20000
bpf_runtime() { # mode -> "name=ns/run ..." of its programs
	local mode=$1 func sym=cuLaunchKernel ropt= first
	case $mode in *launch*) func=launch ;; *) func=sync; sym=cuStreamSynchronize ;; esac
	[ "$mode" = empty_ret_sync ] && ropt=-r
	first=$(last_prog_id)
	side_start $T/cc $B/callcost -w -H -f $func -n $STATS_N || exit 1
	case $mode in
	empty_*) start_empty $sym $ropt ;;
	gpubpf_*) $GPUBPF record -q --libcuda $LIB -p "$SIDE_PID" -o $T/trace.json > /dev/null 2> $T/tracer.err &
		TP=$!; HELPERS+=($TP) ;;
	esac
	kill -USR1 "$SIDE_PID"
	side_done
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
first, n = int(sys.argv[1]), int(sys.argv[2])
for p in json.load(sys.stdin):
    if p["id"] > first and p.get("name", "").startswith(("gb_entry", "gb_return", "empty_")) \
            and p.get("run_cnt") == n:
        print("%s=%.0f" % (p["name"], p["run_time_ns"] / n), end=" ")' "$first" $STATS_N
	stop_jobs $TP
	side_end
}
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
if [ -n "$OLD_STATS" ] && command -v bpftool > /dev/null && sysctl -qw kernel.bpf_stats_enabled=1; then
	{
	hr ""
	hr "BPF program run time per hit (kernel.bpf_stats_enabled, one run of $STATS_N calls each; excludes the trap itself):"
	hr ""
	hr "| mode | program ns/hit |"
	hr "|---|---|"
	for m in empty_launch empty_ret_sync gpubpf_launch gpubpf_sync; do
		hr "| $m | $(bpf_runtime $m) |"
	done
	} > $T/table1b
	sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
	cat $T/table1b
	cat $T/table1b >> $T/table1
fi

###########################################################################
echo "== 2. collector decode + Chrome-trace export ($COLL_N events, medians of $COLL_REPS) =="
$B/collector_bench -n "$COLL_N" -r "$COLL_REPS" -d "$T" | tee $T/coll.out | sed 's/^/  /'
CL=$(grep '^median' $T/coll.out)
[ -n "$CL" ] || { echo "bench: collector_bench failed" >&2; exit 1; }
mev() { awk -v v="$1" 'BEGIN { printf "%.2f M", v / 1e6 }'; }
{
hr "| stage | events/s (median) | MB/s (median) | output size |"
hr "|---|---:|---:|---:|"
hr "| decode (collector_record) | $(mev $(echo $CL | kv decode_ev_s)) | | |"
hr "| model_finish (sort + kernel names) | $(mev $(echo $CL | kv finish_ev_s)) | | |"
hr "| export .json, write only (page cache) | $(mev $(echo $CL | kv jsonw_ev_s)) | $(echo $CL | kv jsonw_mb_s) | |"
hr "| export .json incl. commit (fsync + rename) | $(mev $(echo $CL | kv json_ev_s)) | $(echo $CL | kv json_mb_s) | $(awk -v b=$(echo $CL | kv json_bytes) 'BEGIN { printf "%.0f MB", b / 1e6 }') |"
hr "| export .json.gz incl. commit | $(mev $(echo $CL | kv gz_ev_s)) | $(echo $CL | kv gz_mb_s) (of JSON) | $(awk -v b=$(echo $CL | kv gz_bytes) 'BEGIN { printf "%.0f MB", b / 1e6 }') |"
} > $T/table2
cat $T/table2

###########################################################################
echo "== 3. sustained rate with zero lost events (cuLaunchKernel, ${RATE_SECS}s runs, $RATE_REPS reps) =="
one_rate() { # rate threads [library]
	local out=$T/rate.rows tr=$T/tracer.err lib=${3:-$LIB}
	side_start $T/rate $B/callcost -l $lib -w -H -f launch -T "$RATE_SECS" -r "$1" -t "$2" || exit 1
	$GPUBPF record -q --libcuda $lib -p "$SIDE_PID" -o $T/trace.json > /dev/null 2> "$tr" &
	local tp=$!
	HELPERS+=($tp)
	kill -USR1 "$SIDE_PID"
	local c0; c0=$(cpu_ticks $tp)
	side_done
	# read while the target holds: the recorder exits with it
	local c1; c1=$(cpu_ticks $tp)
	stop_jobs $tp
	side_end
	echo "$(grep -m1 '^func=' $out) $(rec_summary "$tr") gpubpf_cpu=$(awk -v a=$c0 -v b=$c1 -v hz=$(getconf CLK_TCK) -v s=$RATE_SECS 'BEGIN { printf "%.0f%%", (b - a) / hz / s * 100 }')"
}
# user + system CPU ticks of a process
cpu_ticks() { sed 's/.*) //' /proc/$1/stat 2>/dev/null | awk '{ print $12 + $13 }'; }
# row_of FILE: from one_rate's lines, the table's columns: ach (median
# rate), ev (recorded/made, each rep), dr (dropped, each rep), ok, cpu
row_of() {
	ach=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) print substr($i, 6) }' $1 | median)
	ev=$(awk '{ e = c = 0; for (i = 1; i <= NF; i++) { if ($i ~ /^events=/) e = substr($i, 8); if ($i ~ /^calls=/) c = substr($i, 7) } printf "%s%d/%d", (NR > 1 ? ", " : ""), e, c }' $1)
	dr=$(awk '{ d = "?"; for (i = 1; i <= NF; i++) if ($i ~ /^dropped=/) d = substr($i, 9); printf "%s%s", (NR > 1 ? ", " : ""), d }' $1)
	ok=$(awk '{ e = c = -1; d = "?"; for (i = 1; i <= NF; i++) { if ($i ~ /^events=/) e = substr($i, 8); if ($i ~ /^calls=/) c = substr($i, 7); if ($i ~ /^dropped=/) d = substr($i, 9) } if (d != "0" || e != c) bad = 1 } END { print bad ? "no" : "yes" }' $1)
	cpu=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^gpubpf_cpu=/) print substr($i, 12) + 0 }' $1 | median)
}
{
hr "| tracer | threads | target calls/s | achieved calls/s (median) | events recorded / calls made (each rep) | dropped (each rep) | zero loss | gpubpf CPU (median) |"
hr "|---|---:|---:|---:|---:|---:|---|---:|"
} > $T/table3
# rate_rows LABEL THREADS LIB RATE...: RATE_REPS runs of callcost on LIB
# at each RATE (calls/s, 0: unlimited) under gpubpf, a row of the table
# each; RB: the highest achieved rate with zero loss in every repetition
# ("none")
rate_rows() {
	local label=$1 th=$2 lib=$3 rate rep line f
	shift 3
	RB=none
	for rate in "$@"; do
		f=$T/rate.$th.$rate.$(basename "$(dirname "$lib")")
		: > "$f"
		for rep in $(seq "$RATE_REPS"); do
			line=$(one_rate $rate $th $lib)
			echo "$line" >> "$f"
			printf '  %s threads=%d target=%s rep %d: %s\n' "$label" $th \
				$([ $rate = 0 ] && echo max || echo $rate) $rep "$line"
		done
		row_of "$f"
		if [ $ok = yes ] && { [ $RB = none ] || awk -v a=$ach -v b=$RB 'BEGIN { exit !(a > b) }'; }; then
			RB=$(printf %.0f $ach)
		fi
		hr "| $label | $th | $([ $rate = 0 ] && echo "unlimited" || echo $rate) | $(printf %.0f $ach) | $ev | $dr | $ok | ${cpu}% |" >> $T/table3
	done
}
declare -A BEST REF PBEST PREF
for th in 1 2; do
	rate_rows gpubpf $th $LIB $RATE_LIST
	BEST[$th]=$RB
done
# ref_rate THREADS LIB: the most an empty uprobe on LIB's cuLaunchKernel
# lets through, the same loop without gpubpf: RR, the median of RATE_REPS
# (calls/s)
ref_rate() {
	: > $T/ref.rows
	for rep in $(seq "$RATE_REPS"); do
		side_start $T/rate $B/callcost -l $2 -w -f launch -T "$RATE_SECS" -t $1 || exit 1
		ELIB=$2 start_empty cuLaunchKernel
		kill -USR1 "$SIDE_PID"
		wait "$SIDE_JOB"
		stop_jobs $TP
		cat $T/rate.rows >> $T/ref.rows
		printf '  empty uprobe %s threads=%d target=max rep %d: %s\n' $2 $1 $rep "$(cat $T/rate.rows)"
	done
	RR=$(printf %.0f $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) print substr($i, 6) }' \
		$T/ref.rows | median))
}
for th in 1 2; do
	ref_rate $th $LIB
	REF[$th]=$RR
	hr "| empty uprobe (reference) | $th | unlimited | ${REF[$th]} | – | – | – | – |" >> $T/table3
done
# the same on the emulated push entry (section 7's stub), whose trap is the
# cheapest, so calls come several times faster: at PUSH_RATES, then at full
# speed (on a VM whose traps are cheap, millions a second: past what the
# recorder decodes, ~1.1 million records a second, and what it refuses is
# counted)
PUSH=$B/push/libcuda.so.1
for th in 1 2; do
	rate_rows "gpubpf, push entry" $th $PUSH $PUSH_RATES 0
	PBEST[$th]=$RB
	ref_rate $th $PUSH
	PREF[$th]=$RR
	hr "| empty uprobe, push entry (reference) | $th | unlimited | ${PREF[$th]} | – | – | – | – |" >> $T/table3
done
cat $T/table3
SUM3="Highest achieved rate with zero lost events in every repetition: 1 thread $(rate_fmt ${BEST[1]}) calls/s, 2 threads $(rate_fmt ${BEST[2]}) calls/s (an empty uprobe alone lets through ${REF[1]} and ${REF[2]} calls/s); on the push entry, $(rate_fmt ${PBEST[1]}) and $(rate_fmt ${PBEST[2]}) calls/s (empty uprobe ${PREF[1]} and ${PREF[2]})."
echo "$SUM3"

###########################################################################
# 4. GPU timing (defined above, in gpu_section)
gpu_section

###########################################################################
ELAPSED=$(( $(date +%s) - START ))
echo "bench: done in ${ELAPSED}s"
# 5. Python stack walk cost (writes its own block in $BENCH_MD)
BENCH_MD="$BENCH_MD" bash bench/stack_bench.sh
# 6. late attach (writes its own block in $BENCH_MD)
BENCH_MD="$BENCH_MD" bash bench/inject_bench.sh
# 7. Per-call cost by entry prologue shape (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/prologue_bench.sh
# 8. .pftrace against JSON: size and export time (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/pftrace_bench.sh
# 9. thread states and the CPU sampler (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/sched_bench.sh
# 10. the wake hook of attributed stacks (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/wake_bench.sh
# 11. recording memory against recording length (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/memory_bench.sh
# 12. converting a large trace in bounded memory (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/convert_bench.sh
# 13. states and samples: one job's slowdown (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/slowdown_bench.sh
# 14. record --autograd's probes (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/autograd_bench.sh
# 15. what one BPF helper call costs here (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/helper_bench.sh
# 16. the code-free hook (writes its own block)
BENCH_MD="$BENCH_MD" bash bench/codefree_bench.sh

[ "$BENCH_MD" = - ] && exit 0
MACHINE="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), virt: $(systemd-detect-virt --vm 2>/dev/null || echo unknown)"
{
echo "<!-- bench:begin (generated by bench/run.sh; edit outside these markers) -->"
echo "## Results"
echo
echo "- command: \`make bench\` (= \`bash bench/run.sh\`, as root)"
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- kernel: $(uname -srm)"
echo "- machine: $MACHINE ($(hostname))"
echo "- gpubpf: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- user bpf 2>/dev/null || echo ' + uncommitted changes in user/ bpf/')"
echo "- load average at start: $LOAD0 (other jobs share these 2 vCPUs; see the spread per repetition in the run's output)"
echo "- knobs: COST_REPS=$COST_REPS COST_N=$COST_N UNTRACED_N=$UNTRACED_N COLL_N=$COLL_N COLL_REPS=$COLL_REPS RATE_REPS=$RATE_REPS RATE_SECS=$RATE_SECS PUSH_RATES=\"$PUSH_RATES\"; run took ${ELAPSED}s"
echo
echo "### 1. Cost per traced call"
echo
cat $T/table1
echo
[ -n "$GB_ISSUES" ] && { echo "**gpubpf lost or miscounted events:** $GB_ISSUES"; echo; }
echo "### 2. Collector and export throughput (one thread, $COLL_N events)"
echo
cat $T/table2
echo
echo "### 3. Sustained call rate with zero lost events (default rings: a call ring per CPU, 1 MiB in all; 1 MiB for other calls and records; 16 MiB for GPU records)"
echo
cat $T/table3
echo
echo "$SUM3"
echo "<!-- bench:end -->"
} > $T/block
splice_block bench "$T/block" "$BENCH_MD"
echo "bench: results written to $BENCH_MD"
