#!/usr/bin/env bash
# test-timeout: 240
# GPU machine check: what a job keeps paying after gpubpf leaves (issue
# #9), where a GPU is lent: `bash tests/gpu/t0975-gpu-detach-cost.sh` as
# root there (tests/run.sh runs it too, and it skips without a GPU; about 3
# minutes).  Carry build/gpubpf, build/libgpubpf_cupti.so and .carry
# (`make gpu-carry`); PyTorch.
# Three PyTorch loops started normally run side by side, printing their
# speed every second (tests/gpu/late_loop.py):
#   A is never attached (the control: how a loop's speed drifts by itself);
#   B is recorded twice with `record -p --no-device` (probes only);
#   C is recorded twice with `record -p` (late attach, then re-attach).
# For B and C the speed after the last detach over the speed before the
# first attach, divided by A's over the same seconds of its run, must be
# within 2% of 1.  Also reported: C's threads before and after (CUPTI's own
# threads must be gone once it is finalized), the BPF run time per call of
# the probes on the real libcuda (kernel.bpf_stats_enabled, with bpftool),
# and how the launch-to-kernel latency moves over each recording of C
# (tests/gpu/launch_latency.py: a drift there is a GPU clock drift, which
# the trace must have repaired: tests/check_gpu.py).
. "$(dirname "$0")/../lib.sh"
test_description "GPU machine: a job's speed after gpubpf detached"
require_gpu
require_root
require_gpubpf
require_file "$GPUBPF_ROOT/build/libgpubpf_cupti.so"
python3 -c 'import torch' 2>/dev/null || skip_all "needs PyTorch (python3 -c 'import torch')"
cd "$GPUBPF_ROOT" || exit 1
. bench/lib.sh
out=${OUT:-/tmp/gpubpf-gpu-detach}
mkdir -p "$out"
export PATH="$PWD/.carry/bin:$PATH"
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset CUDA_INJECTION64_PATH
secs=45
now() { python3 -c 'import time; print(time.monotonic_ns())'; }
threads() { for t in /proc/"$1"/task/*; do cat "$t/comm"; done 2>/dev/null | sort | uniq -c | tr -s ' \n' ' '; }

# Three loops side by side, so that whatever moves the machine's speed
# moves all three: A is never attached; at 12 s and 24 s, B is recorded
# with --no-device and C with GPU timing (late attach, then re-attach), both
# at once, 5 s each.  The speed before is that of [3 s, 12 s), after that of
# [31 s, 45 s) of each loop's run.
declare -A pid
t0=$(now)
for n in A B C; do
	python3 tests/gpu/late_loop.py --seconds "$secs" >"$out/$n.txt" 2>"$out/$n.err" &
	pid[$n]=$!
	at_exit "kill ${pid[$n]} 2>/dev/null"
done
sysctl -qw kernel.bpf_stats_enabled=1 || diag "no kernel.bpf_stats_enabled"
command -v bpftool >/dev/null || diag "no bpftool: no BPF run times"
for i in 1 2; do
	while (($(now) < t0 + (12 * i) * 1000000000)); do sleep 0.2; done
	diag "C's threads before attach $i: $(threads "${pid[C]}")"
	((i == 1)) && ta=$(now)
	"$GPUBPF" record --no-device -p "${pid[B]}" -d 5s -q -o "$out/B.$i.json" >"$out/B.rec$i.txt" 2>&1 &
	gb=$!
	"$GPUBPF" record -p "${pid[C]}" -d 5s -q -o "$out/C.$i.json" >"$out/C.rec$i.txt" 2>&1 &
	gc=$!
	: >"$out/stats$i"
	while kill -0 "$gb" 2>/dev/null || kill -0 "$gc" 2>/dev/null; do
		st=$(prog_stats gb_)
		[[ -n "$st" ]] && echo "$st" >"$out/stats$i"
		sleep 0.2
	done
	wait "$gb"
	is "B: record --no-device -p exits 0 ($i)" "$?" 0
	wait "$gc"
	is "C: record -p exits 0 ($i)" "$?" 0
	td=$(now)
	diag "BPF ns per run, runs, of both recorders' programs (bpf_stats): $(tr '\n' ';' <"$out/stats$i")"
	grep -h 'late attach\|GPU timing off' "$out/C.rec$i.txt" | diag
	sleep 3
	diag "C's threads 3 s after detach $i: $(threads "${pid[C]}")"
done
sysctl -qw kernel.bpf_stats_enabled=0
for n in A B C; do
	wait "${pid[$n]}"
	is "$n: the loop ran on to its end" "$?" 0
	echo "$t0 $ta $td" >"$out/$n.times"
done
python3 - "$out" <<'PY' >"$out/detach.txt" 2>&1
import sys
out = sys.argv[1]


def speeds(name):
    t0, ta, td = (int(x) for x in open("%s/%s.times" % (out, name)).read().split())
    r = [(int(l.split()[1]) - t0, float(l.split()[2])) for l in open("%s/%s.txt" % (out, name))
         if l.startswith("rate ")]
    return r, ta - t0, td - t0


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


a, _, _ = speeds("A")
for name in ("B", "C"):
    r, ta, td = speeds(name)
    lo, hi = 3e9, td + 2e9
    before = med([s for t, s in r if lo <= t < ta])
    after = med([s for t, s in r if t >= hi])
    a_before = med([s for t, s in a if lo <= t < ta])
    a_after = med([s for t, s in a if t >= hi])
    rel = (after / before) / (a_after / a_before) - 1
    print("%s: %.1f steps/s before, %.1f after; control A %.1f, %.1f over the same seconds: "
          "%+.2f%% against A: %s" % (name, before, after, a_before, a_after, 100 * rel,
                                     "ok" if abs(rel) <= 0.02 else "NOT within 2%"))
PY
diag <"$out/detach.txt"
for n in B C; do
	ok "$n: speed after detaching within 2% of before, against the control" \
		grep -q "^$n: .*: ok$" "$out/detach.txt"
done
for i in 1 2; do
	python3 tests/gpu/launch_latency.py "$out/C.$i.json" 0.5 | diag
	python3 -c 'import json, sys; print("C.%s: GPU clock repair %s" % (sys.argv[2],
{k: v for k, v in json.load(open(sys.argv[1]))["gpubpf"]["gpu"].items() if "clock" in k}))' \
		"$out/C.$i.json" "$i" | diag
	tap_from python3 tests/check_gpu.py --edge-ms 500 "$out/C.$i.json"
done
grep -h . "$out"/C.err | tail -5 | diag
# the re-attach's trace, small enough to take home
"$GPUBPF" convert "$out/C.2.json" "$out/C.2.pftrace"
gzip -f "$out"/*.json 2>/dev/null
done_testing
