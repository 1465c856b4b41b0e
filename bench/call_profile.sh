#!/usr/bin/env bash
# Where a traced call's time goes in the kernel: `bash bench/call_profile.sh
# [DEPTH [RECORD_OPTION...]]`, as root, with perf (Debian's linux-perf; not
# part of `make bench`: a tool for reading the costs, not a measurement
# kept).  One Python process (bench/sidecost.py) calls two copies of
# build/bench/push's cuLaunchKernel (entry `push %rbp`, emulated) in turn
# from a stack of DEPTH frames (default 30), ROUNDS (2000) rounds of K (200)
# calls each: one copy untraced, the other recorded by `gpubpf record -p`
# with RECORD_OPTIONs (default: stacks, --stack-depth 64; `--stack none`
# for none).  perf samples the process at 20 kHz for its whole run; each
# kernel function's samples (the BPF programs' own code, the helpers they
# call, the trap) are printed as nanoseconds per traced call: samples x 50
# µs / calls.  These VMs run at one of two speeds from second to second, so
# compare functions within one run, not runs with each other.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DEPTH=${1:-30}
shift || true
OPTS=("$@")
[ ${#OPTS[@]} -gt 0 ] || OPTS=(--stack-depth 64)
K=${K:-200}
ROUNDS=${ROUNDS:-2000}
PYTHON=${PYTHON:-python3}
GPUBPF=${GPUBPF:-build/gpubpf}
TOP=${TOP:-25}
command -v perf >/dev/null || { echo "call_profile: needs perf (apt-get install linux-perf)" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
side_copies build/bench/push/libcuda.so.1 "$T/libs" u s
side_start "$T/ready" "$PYTHON" bench/sidecost.py "$DEPTH" "$K" "$ROUNDS" \
	"$T/libs/u/libcuda.so.1" "$T/libs/s/libcuda.so.1"
gpubpf_attach "$T/s.err" --no-device --no-states --sample-hz 0 -p "$SIDE_PID" "${OPTS[@]}" \
	--libcuda "$T/libs/s/libcuda.so.1" -o "$T/s.json"
rec=$GB_JOB
perf record -q -e cpu-clock -F 20000 -p "$SIDE_PID" -o "$T/perf.data" 2>/dev/null &
pp=$!
sleep 0.5
kill -USR1 "$SIDE_PID"
wait "$SIDE_JOB"
kill -INT "$pp" 2>/dev/null || true
wait "$pp" || true
stop_jobs "$rec"
calls=$((K * ROUNDS))
echo "call_profile: depth $DEPTH, gpubpf record ${OPTS[*]}; $calls traced calls; ns per traced call, kernel functions:"
perf script -i "$T/perf.data" -F ip,sym 2>/dev/null |
	awk '$1 ~ /^ffff/ { n[$2]++ } END { for (s in n) print n[s], s }' | sort -nr | head -n "$TOP" |
	awk -v c="$calls" '{ printf "%8.1f  %s\n", $1 * 50000 / c, $2 }'
