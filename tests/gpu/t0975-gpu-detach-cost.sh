#!/usr/bin/env bash
# test-timeout: 200
# GPU machine check: what a job keeps paying after gpubpf leaves (issue
# #9), where a GPU is lent: `bash tests/gpu/t0975-gpu-detach-cost.sh` as
# root there (tests/run.sh runs it too, and it skips without a GPU; about 2
# minutes).  Carry build/gpubpf, build/libgpubpf_cupti.so and .carry
# (`make gpu-carry`); PyTorch.
# Three PyTorch loops started normally run side by side, printing their
# speed every second (tests/gpu/late_loop.py):
#   A is never attached (the control: how a loop's speed drifts by itself);
#   B is recorded twice with `record -p --no-device` (probes only);
#   C is recorded twice with `record -p` (late attach, then re-attach).
# For B and C, the speed over A's (each second against A's nearest), after
# the last detach against before the first attach: within 2%.  Also
# reported: C's threads before and after (CUPTI's own threads must be gone
# once it is finalized), the BPF run time per call of the probes on the
# real libcuda (kernel.bpf_stats_enabled, with bpftool), and how the
# launch-to-kernel latency moves over each recording of C
# (tests/gpu/launch_latency.py: a drift there is a GPU clock drift, which
# the trace must have repaired: tests/check_gpu.py).
. "$(dirname "$0")/../lib.sh"
test_description "GPU machine: a job's speed after gpubpf detached"
gpu_setup /tmp/gpubpf-gpu-detach
. bench/lib.sh
secs=80
now() { python3 -c 'import time; print(time.monotonic_ns())'; }
threads() { for t in /proc/"$1"/task/*; do cat "$t/comm"; done 2>/dev/null | sort | uniq -c | tr -s ' \n' ' '; }

# Three loops side by side, so that whatever moves the machine's speed
# moves all three: A is never attached.  Once all three run (each printed
# two speeds: PyTorch's start takes ~10 s with three at once), 15 s of
# speeds before; then B is recorded with --no-device and C with GPU timing
# (late attach), both at once, 5 s each, and again 2 s after (C's
# re-attach); then the speeds after, from 2 s after the last detach to the
# loops' end.
declare -A pid
for n in A B C; do
	python3 tests/gpu/late_loop.py --seconds "$secs" >"$out/$n.txt" 2>"$out/$n.err" &
	pid[$n]=$!
	at_exit "kill ${pid[$n]} 2>/dev/null"
done
for n in A B C; do
	wait_for_cmd 60 sh -c '[ "$(grep -c "^rate " "$1")" -ge 2 ]' sh "$out/$n.txt"
done
tb=$(now)
sleep 15
sysctl -qw kernel.bpf_stats_enabled=1 || diag "no kernel.bpf_stats_enabled"
command -v bpftool >/dev/null || diag "no bpftool: no BPF run times"
ta=$(now)
for i in 1 2; do
	diag "C's threads before attach $i: $(threads "${pid[C]}")"
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
	sleep 2
	diag "C's threads 2 s after detach $i: $(threads "${pid[C]}")"
done
sysctl -qw kernel.bpf_stats_enabled=0
for n in A B C; do
	wait "${pid[$n]}"
	is "$n: the loop ran on to its end" "$?" 0
done
echo "$tb $ta $td" >"$out/times"
# each of B's and C's speeds over A's nearest in time, before and after
python3 - "$out" <<'PY' >"$out/detach.txt" 2>&1
import sys
out = sys.argv[1]
tb, ta, td = (int(x) for x in open(out + "/times").read().split())


def rates(name):
    return [(int(l.split()[1]), float(l.split()[2])) for l in open("%s/%s.txt" % (out, name))
            if l.startswith("rate ")]


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


a = rates("A")
for name in ("B", "C"):
    r = [(t, s / min(a, key=lambda x: abs(x[0] - t))[1]) for t, s in rates(name)]
    before = [q for t, q in r if tb <= t < ta]
    after = [q for t, q in r if t >= td + 2e9]
    rel = med(after) / med(before) - 1
    print("%s: speed over A's, median of %d seconds before %.3f, of %d after %.3f: %+.2f%%: %s"
          % (name, len(before), med(before), len(after), med(after), 100 * rel,
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
