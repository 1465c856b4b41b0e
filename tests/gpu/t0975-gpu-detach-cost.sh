#!/usr/bin/env bash
# test-timeout: 240
# GPU machine check: what a job keeps paying after gpubpf leaves (issue
# #9), where a GPU is lent: `bash tests/gpu/t0975-gpu-detach-cost.sh` as
# root there (tests/run.sh runs it too, and it skips without a GPU; about 3
# minutes).  Carry build/gpubpf, build/libgpubpf_cupti.so and .carry
# (`make gpu-carry`); PyTorch.
# Three PyTorch loops started normally run one after the other for the
# same time, printing their speed every second (tests/gpu/late_loop.py):
#   A is never attached (the control: how a loop's speed drifts by itself);
#   B is recorded once with `record -p --no-device` (probes only);
#   C is recorded twice with `record -p` (late attach, then re-attach).
# For B and C the speed after the last detach over the speed before the
# first attach, divided by A's over the same seconds of its run, must be
# within 2% of 1.  Also reported: C's threads before and after (CUPTI's own
# threads must be gone once it is finalized), the BPF run time per call of
# the probes on the real libcuda (kernel.bpf_stats_enabled, with bpftool),
# and how the launch-to-kernel latency moves over each recording of C
# (tests/gpu/launch_latency.py: a drift there is a GPU clock drift).
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

# run_loop NAME SECOND:OPTIONS...: a loop of $secs s; at each SECOND of its
# run, one `record -p -d 5s` with OPTIONS (a comma list; "control": no
# recording, the loop just goes on).  Writes NAME.txt (rates), NAME.times
# (start, first attach, last detach: CLOCK_MONOTONIC ns).
run_loop() {
	local name=$1 t0 ta="" td="" at opts i=0
	shift
	t0=$(now)
	python3 tests/gpu/late_loop.py --seconds "$secs" >"$out/$name.txt" 2>"$out/$name.err" &
	local w=$!
	at_exit "kill $w 2>/dev/null"
	for at in "$@"; do
		i=$((i + 1))
		opts=${at#*:}
		at=${at%%:*}
		while (($(now) < t0 + at * 1000000000)); do sleep 0.2; done
		diag "$name threads before attach $i: $(threads "$w")"
		[[ -n "$ta" ]] || ta=$(now)
		if [[ "$opts" == "control" ]]; then
			sleep 5
		else
			# shellcheck disable=SC2086
			"$GPUBPF" record ${opts//,/ } -p "$w" -d 5s -q -o "$out/$name.$i.json" \
				>"$out/$name.rec$i.txt" 2>&1 &
			local g=$! s
			: >"$out/$name.stats$i"
			while kill -0 "$g" 2>/dev/null; do
				s=$(prog_stats gb_)
				[[ -n "$s" ]] && echo "$s" >"$out/$name.stats$i"
				sleep 0.2
			done
			wait "$g"
			ok "$name: record ${opts//,/ } -p wrote a trace ($i)" test -s "$out/$name.$i.json"
			diag "$name: BPF ns per run, runs (bpf_stats): $(tr '\n' ';' <"$out/$name.stats$i")"
			grep -h 'late attach\|GPU timing off' "$out/$name.rec$i.txt" 2>/dev/null | diag
		fi
		td=$(now)
		sleep 3
		diag "$name threads 3 s after detach $i: $(threads "$w")"
	done
	wait "$w"
	is "$name: the loop ran on to its end" "$?" 0
	echo "$t0 $ta $td" >"$out/$name.times"
}

sysctl -qw kernel.bpf_stats_enabled=1 || diag "no kernel.bpf_stats_enabled"
command -v bpftool >/dev/null || diag "no bpftool: no BPF run times"
run_loop A 12:control 24:control
run_loop B 12:--no-device
run_loop C 12: 24:
sysctl -qw kernel.bpf_stats_enabled=0
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
	[[ -s "$out/C.$i.json" ]] && python3 tests/gpu/launch_latency.py "$out/C.$i.json" 0.5 | diag
done
grep -h . "$out"/C.err | tail -5 | diag
gzip -f "$out"/*.json 2>/dev/null
done_testing
