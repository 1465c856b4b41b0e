#!/usr/bin/env bash
# GPU machine check for late attach (issue #9), run by hand where a GPU is
# lent (CI has none; about 3 minutes).  Carry build/gpubpf,
# build/libgpubpf_cupti.so and, in .carry/lib, what the GPU image lacks
# (libcjson.so.1).  NOT YET RUN on a GPU: written on a machine without one.
#  1. A PyTorch loop started normally (no CUDA_INJECTION64_PATH; its first
#     --profile-steps steps under torch.profiler, for per-step kernel
#     counts) is recorded twice with `record -p -d 5s`: the first loads the
#     library (late attach), the second finds it.  Per kernel name, gpubpf's
#     count over its window divided by torch.profiler's per-step count gives
#     the same number of steps for every name (edges aside: within 1 step);
#     every launch after the window opened has its kernel
#     (tests/check_window.py); the loop's speed after gpubpf left is within
#     2% of its speed before it came.
#  2. Attached while torch.profiler holds CUPTI: host calls only, and the
#     reason in one line and in the trace.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpubpf-gpu-late}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset CUDA_INJECTION64_PATH
echo "== machine: $(uname -r); $(nvidia-smi -L 2>&1 | head -1)"
build/gpubpf --version || exit 1

echo "== 1. attach twice to a loop started without the library"
python3 tests/gpu/late_loop.py --seconds 75 --profile-steps 50 --profile-out "$out/prof.json" \
	>"$out/loop.txt" 2>"$out/loop.err" &
w=$!
sleep 20
t_attach=$(python3 -c 'import time; print(time.monotonic_ns())')
for i in 1 2; do
	build/gpubpf record -v -p "$w" -d 5s -q -o "$out/late$i.json" 2>&1 | grep -v '^libbpf' | tail -4
	sleep 5
done
t_detach=$(python3 -c 'import time; print(time.monotonic_ns())')
wait "$w"
echo "loop exit status $?: $(tail -1 "$out/loop.txt")"
python3 - "$out" "$t_attach" "$t_detach" <<'PYEOF'
import collections, json, sys
out, t_attach, t_detach = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rates = [l.split() for l in open(out + "/loop.txt") if l.startswith("rate ")]
before = [float(r[2]) for r in rates if t_attach - 8e9 <= int(r[1]) < t_attach]
after = [float(r[2]) for r in rates if int(r[1]) > t_detach + 2e9]
med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
b, a = med(before), med(after)
print("speed: %.1f steps/s before attaching, %.1f after detaching (%.2f%%): %s"
      % (b, a, 100 * (a - b) / b, "ok" if abs(a - b) / b <= 0.02 else "NOT within 2%"))
prof = [e for e in json.load(open(out + "/prof.json"))["traceEvents"] if e.get("cat") == "kernel"]
per_step = {n: c / 50 for n, c in collections.Counter(e["name"] for e in prof).items()}
for i in (1, 2):
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
PYEOF
for i in 1 2; do
	python3 tests/check_window.py --edge-ms 500 "$out/late$i.json" "$w"
	python3 tests/check_gpu.py --edge-ms 500 "$out/late$i.json" | grep -v '^ok'
done

echo "== 2. attach while torch.profiler holds CUPTI"
python3 tests/gpu/late_loop.py --seconds 30 --hold-profiler >"$out/held.txt" 2>"$out/held.err" &
w=$!
sleep 15
build/gpubpf record -p "$w" -d 3s -q -o "$out/held.json" 2>"$out/held.gpubpf.err"
grep 'GPU timing off' "$out/held.gpubpf.err" || echo "NO REASON GIVEN"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); g=d['gpubpf']['gpu']; ev=d['traceEvents']; print('errors', g['errors'], 'kernels', sum(1 for e in ev if e.get('cat')=='kernel'), 'api', sum(1 for e in ev if e.get('cat')=='cuda_api'))" "$out/held.json"
wait "$w"
echo "held loop exit status $?"
gzip -f "$out"/*.json
