#!/usr/bin/env bash
# GPU machine check for GPU timing (issue #4), run by hand where a GPU is
# lent (CI has none; fits in 8 minutes).  Carry build/gpubpf,
# build/libgpubpf_cupti.so and, in .carry/lib, the shared libraries the
# binary needs that the GPU image lacks (libcjson.so.1).
# A small PyTorch loop runs untraced, under `gpubpf record` (GPU timing on
# and --no-device), and under torch.profiler; per-name kernel counts and
# total kernel time are compared, and each tool's slowdown is reported.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpubpf-gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
steps=${STEPS:-300}
loop=(python3 tests/gpu/torch_loop.py --steps "$steps")
elapsed() { sed -n 's/.*elapsed \([0-9.]*\) s.*/\1/p' "$1"; }

echo "== machine: $(uname -r); $(nvidia-smi -L 2>&1 | head -1)"
build/gpubpf --version || exit 1
for i in 1 2 3; do "${loop[@]}" >"$out/plain$i.txt" 2>&1; done
for i in 1 2; do
	build/gpubpf record -o "$out/gpubpf$i.json" -- "${loop[@]}" >"$out/traced$i.txt" 2>"$out/traced$i.err"
	tail -2 "$out/traced$i.err"
done
build/gpubpf record --no-device -o "$out/host.json" -- "${loop[@]}" >"$out/host.txt" 2>"$out/host.err"
tail -1 "$out/host.err"
for i in 1 2; do "${loop[@]}" --profile "$out/prof$i.json" >"$out/prof$i.txt" 2>&1; done
echo "== elapsed (s): untraced $(elapsed "$out/plain1.txt") $(elapsed "$out/plain2.txt") $(elapsed "$out/plain3.txt");" \
	"gpubpf $(elapsed "$out/traced1.txt") $(elapsed "$out/traced2.txt");" \
	"gpubpf --no-device $(elapsed "$out/host.txt");" \
	"torch.profiler $(elapsed "$out/prof1.txt") $(elapsed "$out/prof2.txt")"
read -r t0 t1 < <(sed -n 's/.*window \([0-9]*\) \([0-9]*\).*/\1 \2/p' "$out/traced1.txt")
python3 tests/gpu/compare_kernels.py "$out/gpubpf1.json" "$t0" "$t1" "$out/prof1.json"
echo "== links, names, tracks (tests/check_gpu.py)"
python3 tests/check_gpu.py "$out/gpubpf1.json"
echo "== a launch's Python stack"
python3 -c "import json,sys; ev=json.load(open(sys.argv[1]))['traceEvents']; e=[e for e in ev if e.get('name','').startswith('cuLaunchKernel') and 'stack' in e['args']]; print(len(e), 'launches with stacks'); print('\n'.join(e[len(e)//2]['args']['stack'][:8]))" "$out/gpubpf1.json"
echo "== report"
build/gpubpf report "$out/gpubpf1.json" | head -60
echo "== attach to a job started with the library, twice"
CUDA_INJECTION64_PATH="$PWD/build/libgpubpf_cupti.so" python3 tests/gpu/torch_loop.py --steps 20000 >"$out/job.txt" 2>&1 &
w=$!
sleep 10
for i in 1 2; do
	build/gpubpf record -p "$w" -d 2s -o "$out/attach$i.json" 2>&1 | tail -1
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); ev=d['traceEvents']; print('kernels', sum(1 for e in ev if e.get('cat')=='kernel'), 'flows', sum(1 for e in ev if e.get('ph')=='s'), 'api', sum(1 for e in ev if e.get('cat')=='cuda_api'))" "$out/attach$i.json"
done
kill "$w"
gzip -f "$out"/*.json
