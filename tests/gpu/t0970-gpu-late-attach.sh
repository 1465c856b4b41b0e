#!/usr/bin/env bash
# test-timeout: 330
# GPU machine check for late attach (issue #9), where a GPU is lent: `bash
# tests/gpu/t0970-gpu-late-attach.sh` as root there (tests/run.sh runs it
# too, and it skips without a GPU; about 3 minutes).  Carry build/gpubpf,
# build/libgpubpf_cupti.so and, in .carry/lib, what the GPU image lacks
# (libcjson.so.1: `make gpu-carry`); PyTorch.
#  1. A PyTorch loop started normally (no CUDA_INJECTION64_PATH) is
#     recorded twice with `record -p -d 5s`: the first loads the library
#     (late attach), the second finds it; then twice at once (-d 6s, and
#     -d 2s joining it).  Per kernel name, gpubpf's count
#     over its window divided by the per-step count of torch.profiler (50
#     steps of the same loop in a process of its own) gives the same number
#     of steps for every name (edges aside: within 1 step); every launch
#     after the window opened has its kernel (tests/check_window.py) and
#     the GPU side is whole (tests/check_gpu.py).  The loop's speed before
#     and after is reported; t0975 checks it against a control.
#  2. Attached while torch.profiler holds CUPTI: host calls only, and the
#     reason in one line and in the trace.
# Findings in $OUT (or /tmp/gpubpf-gpu-late), the figures as diagnostics.
. "$(dirname "$0")/../lib.sh"
test_description "GPU machine: late attach (record -p) to PyTorch loops"
gpu_setup /tmp/gpubpf-gpu-late
diag "== machine: $(uname -r); $(nvidia-smi -L 2>&1 | head -1)"
check "gpubpf --version" "$GPUBPF" --version

diag "== 1. attach twice to a loop started without the library"
python3 tests/gpu/late_loop.py --profile-steps 50 --profile-out "$out/prof.json" >"$out/prof.txt" 2>&1
ok "torch.profiler's per-step counts were taken" test -s "$out/prof.json"
python3 tests/gpu/late_loop.py --seconds 75 >"$out/loop.txt" 2>"$out/loop.err" &
w=$!
at_exit "kill $w 2>/dev/null"
sleep 15
t_attach=$(python3 -c 'import time; print(time.monotonic_ns())')
for i in 1 2; do
	"$GPUBPF" record -v -p "$w" -d 5s -q -o "$out/late$i.json" 2>&1 | grep -v '^libbpf' | tail -4 | diag
	ok "record -p wrote a trace (late$i.json)" test -s "$out/late$i.json"
	sleep 5
done
# two at once: the second joins the first (tests/t0415 on the simulated driver)
"$GPUBPF" record -p "$w" -d 6s -q -o "$out/late3.json" 2>"$out/late3.err" &
g=$!
wait_recording "$out/late3.err"
"$GPUBPF" record -p "$w" -d 2s -q -o "$out/late4.json" 2>"$out/late4.err"
ok "the second of two at once ended while the first recorded" kill -0 "$g"
wait "$g"
cat "$out/late3.err" "$out/late4.err" | diag
is "the second did not say the library never started" \
	"$(grep -c 'has not started collecting' "$out/late4.err")" 0
t_detach=$(python3 -c 'import time; print(time.monotonic_ns())')
wait "$w"
is "the loop ran on to its end" "$?" 0
tail -1 "$out/loop.txt" | diag
python3 - "$out" "$t_attach" "$t_detach" <<'PYEOF' >"$out/late.txt" 2>&1
import collections, json, sys
out, t_attach, t_detach = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rates = [l.split() for l in open(out + "/loop.txt") if l.startswith("rate ")]
before = [float(r[2]) for r in rates if t_attach - 8e9 <= int(r[1]) < t_attach]
after = [float(r[2]) for r in rates if int(r[1]) > t_detach + 2e9]
med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
b, a = med(before), med(after)
print("speed: %.1f steps/s before attaching, %.1f after detaching (%+.2f%%; t0975 checks"
      " it against a loop never attached)" % (b, a, 100 * (a - b) / b))
prof = [e for e in json.load(open(out + "/prof.json"))["traceEvents"] if e.get("cat") == "kernel"]
per_step = {n: c / 50 for n, c in collections.Counter(e["name"] for e in prof).items()}
for i in (1, 2, 3, 4):
    d = json.load(open(out + "/late%d.json" % i))
    g = d["gpubpf"]["gpu"]
    pid = next(iter(g["window_open_us"]), None)
    print("late%d: window_open_us %s, late_attach %s, errors %s" % (i, g["window_open_us"], g["late_attach"], g["errors"]))
    if pid is None:
        print("late%d: NO GPU WINDOW" % i)
        continue
    w0 = g["window_open_us"][pid]
    end = max(e["ts"] + e.get("dur", 0) for e in d["traceEvents"] if "ts" in e) - 500e3
    k = collections.Counter(e["name"] for e in d["traceEvents"]
                            if e.get("cat") == "kernel" and w0 <= e["ts"] < end)
    steps = {n: k[n] / per_step[n] for n in per_step if per_step[n]}
    lo, hi = min(steps.values()), max(steps.values())
    print("late%d: %d kernels in the window; steps implied per kernel name %.1f..%.1f: %s"
          % (i, sum(k.values()), lo, hi, "ok" if hi - lo <= 2 else "MISMATCH"))
    for n in sorted(per_step, key=lambda n: steps.get(n, 0)):
        if abs(steps.get(n, 0) - (lo + hi) / 2) > 1:
            print("   %-70.70s %6d kernels, %.1f steps" % (n, k[n], steps.get(n, 0)))
    extra = set(k) - set(per_step)
    if extra:
        print("late%d: kernels torch.profiler did not see: %s" % (i, sorted(extra)[:10]))
    print("late%d: %d unnamed kernels" % (i, sum(1 for e in d["traceEvents"]
                                             if e.get("cat") == "kernel" and e["name"] == "kernel")))
PYEOF
diag <"$out/late.txt"
for i in 1 2 3 4; do
	ok "late$i: every kernel named" grep -q "^late$i: 0 unnamed kernels$" "$out/late.txt"
	ok "late$i: the same number of steps for every kernel name" \
		grep -q "^late$i: .* kernels in the window; .*: ok$" "$out/late.txt"
	tap_from python3 tests/check_window.py --edge-ms 500 "$out/late$i.json" "$w"
	tap_from python3 tests/check_gpu.py --edge-ms 500 "$out/late$i.json"
done

diag "== 2. attach while torch.profiler holds CUPTI"
python3 tests/gpu/late_loop.py --seconds 20 --hold-profiler >"$out/held.txt" 2>"$out/held.err" &
w=$!
at_exit "kill $w 2>/dev/null"
sleep 10
"$GPUBPF" record -p "$w" -d 3s -q -o "$out/held.json" 2>"$out/held.gpubpf.err"
ok "record -p wrote a trace" test -s "$out/held.json"
ok "the reason GPU timing is off is said" grep -q 'GPU timing off' "$out/held.gpubpf.err"
grep 'GPU timing off' "$out/held.gpubpf.err" | diag
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); g=d['gpubpf']['gpu']; ev=d['traceEvents']; print('errors', g['errors'], 'kernels', sum(1 for e in ev if e.get('cat')=='kernel'), 'api', sum(1 for e in ev if e.get('cat')=='cuda_api'))" "$out/held.json" 2>&1 | diag
wait "$w"
is "the held loop ran on to its end" "$?" 0
gzip -f "$out"/*.json
done_testing
