#!/usr/bin/env bash
# test-timeout: 600
# GPU machine check for GPU timing (issue #4), where a GPU is lent: `bash
# tests/gpu/t0960-gpu-timing.sh` as root there (tests/run.sh runs it too,
# and it skips without a GPU; fits in 8 minutes).  Carry build/gpubpf,
# build/libgpubpf_cupti.so and, in .carry/lib, the shared libraries the
# binary needs that the GPU image lacks (libcjson.so.1); PyTorch.
# A small PyTorch loop runs untraced, under `gpubpf record` (GPU timing on
# and --no-device), and under torch.profiler; per-name kernel counts and
# total kernel time are compared, and each tool's slowdown is reported.
# Findings in $OUT (or /tmp/gpubpf-gpu), the figures as TAP diagnostics.
. "$(dirname "$0")/../lib.sh"
test_description "GPU machine: GPU timing against torch.profiler"
gpu_setup /tmp/gpubpf-gpu
steps=${STEPS:-300}
loop=(python3 tests/gpu/torch_loop.py --steps "$steps")
elapsed() { sed -n 's/.*elapsed \([0-9.]*\) s.*/\1/p' "$1"; }

diag "== machine: $(uname -r); $(nvidia-smi -L 2>&1 | head -1)"
check "gpubpf --version" "$GPUBPF" --version
for i in 1 2 3; do "${loop[@]}" >"$out/plain$i.txt" 2>&1; done
for i in 1 2; do
	"$GPUBPF" record -o "$out/gpubpf$i.json" -- "${loop[@]}" >"$out/traced$i.txt" 2>"$out/traced$i.err"
	ok "record -- CMD wrote a trace (gpubpf$i.json)" test -s "$out/gpubpf$i.json"
	tail -2 "$out/traced$i.err" | diag
done
"$GPUBPF" record --no-device -o "$out/host.json" -- "${loop[@]}" >"$out/host.txt" 2>"$out/host.err"
ok "record --no-device wrote a trace" test -s "$out/host.json"
tail -1 "$out/host.err" | diag
for i in 1 2; do "${loop[@]}" --profile "$out/prof$i.json" >"$out/prof$i.txt" 2>&1; done
diag "== elapsed (s): untraced $(elapsed "$out/plain1.txt") $(elapsed "$out/plain2.txt") $(elapsed "$out/plain3.txt");" \
	"gpubpf $(elapsed "$out/traced1.txt") $(elapsed "$out/traced2.txt");" \
	"gpubpf --no-device $(elapsed "$out/host.txt");" \
	"torch.profiler $(elapsed "$out/prof1.txt") $(elapsed "$out/prof2.txt")"
read -r t0 t1 < <(sed -n 's/.*window \([0-9]*\) \([0-9]*\).*/\1 \2/p' "$out/traced1.txt")
python3 tests/gpu/compare_kernels.py "$out/gpubpf1.json" "$t0" "$t1" "$out/prof1.json" >"$out/compare.txt" 2>&1
diag <"$out/compare.txt"
ok "per-name kernel counts equal torch.profiler's" grep -q 'per-name counts EQUAL' "$out/compare.txt"
ok "total kernel time within 2% of torch.profiler's" grep -q 'total kernel time WITHIN 2%' "$out/compare.txt"
diag "== links, names, tracks (tests/check_gpu.py)"
tap_from python3 tests/check_gpu.py "$out/gpubpf1.json"
diag "== launch argument hashes (cuFuncGetParamInfo: CUDA 12.4 drivers and later)"
drv=$(python3 -c 'import ctypes; v = ctypes.c_int(); ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)); print(v.value)')
hashed=$(python3 -c "import json,sys; ev=json.load(open(sys.argv[1]))['traceEvents']; k=[e for e in ev if e.get('cat') in ('kernel', 'nccl') and 'graph_node' not in e['args']]; print('%d %d' % (sum('args_hash' in e['args'] for e in k), len(k)))" "$out/gpubpf1.json")
diag "driver $drv: ${hashed% *} of ${hashed#* } kernels launched outside graphs have an argument hash"
if ((drv >= 12040)); then
	ok "driver >= 12.4: at least 90% of kernels launched outside graphs have an argument hash" \
		test $((100 * ${hashed% *})) -ge $((90 * ${hashed#* }))
else
	skip "driver $drv before 12.4: no cuFuncGetParamInfo" 1
fi
diag "== a launch's Python stack"
python3 -c "import json,sys; ev=json.load(open(sys.argv[1]))['traceEvents']; e=[e for e in ev if e.get('name','').startswith('cuLaunchKernel') and 'stack' in e['args']]; print(len(e), 'launches with stacks'); print('\n'.join(e[len(e)//2]['args']['stack'][:8]))" "$out/gpubpf1.json" 2>&1 | diag
diag "== report"
"$GPUBPF" report "$out/gpubpf1.json" 2>&1 | head -60 | diag
diag "== attach to a job started with the library, twice"
CUDA_INJECTION64_PATH="$PWD/build/libgpubpf_cupti.so" python3 tests/gpu/torch_loop.py --steps 20000 >"$out/job.txt" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
sleep 10
for i in 1 2; do
	"$GPUBPF" record -p "$w" -d 2s -o "$out/attach$i.json" 2>&1 | tail -1 | diag
	ok "record -p wrote a trace (attach$i.json)" test -s "$out/attach$i.json"
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); ev=d['traceEvents']; print('kernels', sum(1 for e in ev if e.get('cat')=='kernel'), 'flows', sum(1 for e in ev if e.get('ph')=='s'), 'api', sum(1 for e in ev if e.get('cat')=='cuda_api'))" "$out/attach$i.json" 2>&1 | diag
done
kill "$w"
gzip -f "$out"/*.json
done_testing
