#!/usr/bin/env bash
# GPU machine check for `gpubpf record` (run by hand where a GPU is lent;
# CI has none).  Needs build/gpubpf carried from the build machine.
# Writes its findings to $OUT (or /tmp/gpubpf-gpu) and prints a summary.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpubpf-gpu}
mkdir -p "$out"
echo "== machine"
uname -r
nvidia-smi -L 2>&1 | head -2
ls -l /sys/kernel/btf/vmlinux 2>&1
echo "== libcuda"
ldconfig -p | grep 'libcuda.so.1 ' | head -2
echo "== gpubpf"
build/gpubpf --version || exit 1
echo "== probe sites in the real libcuda (first instructions: emulated, single-stepped, endbr64)"
real=$(ldconfig -p | awk '/libcuda.so.1 / { print $NF; exit }')
if [ -n "$real" ]; then
	build/gpubpf list -v --libcuda "$real" > "$out/probe-sites.txt" 2>&1
	tail -1 "$out/probe-sites.txt"
	awk '!/^#/ && $4 ~ /^0x/ { insn = ""
		for (i = 6; i < NF; i++) insn = insn (insn ? " " : "") $i; c[insn " (" $NF ")"]++ }
		END { for (k in c) printf "  %-40s %d\n", k, c[k] }' "$out/probe-sites.txt" | sort | head -12
fi
echo "== untraced"
python3 tests/gpu/torch_loop.py --steps 300 2>&1 | tail -1
python3 tests/gpu/torch_loop.py --steps 300 2>&1 | tail -1
echo "== traced"
build/gpubpf record -o "$out/torch.json" -- python3 tests/gpu/torch_loop.py --steps 300 2>&1 | tail -3
build/gpubpf record -o "$out/torch2.json" -- python3 tests/gpu/torch_loop.py --steps 300 2>&1 | tail -3
echo "== summary"
python3 - "$out/torch.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("cat") == "cuda_api"]
print("events", len(ev), "dropped", d["gpubpf"]["dropped_total"], "threads",
      len({e["tid"] for e in ev}))
for n, c in collections.Counter(e["name"] for e in ev).most_common(25):
    print("  %-36s %d" % (n, c))
launches = [e for e in ev if e["name"].startswith("cuLaunch")]
named = [e for e in launches if not e["args"].get("kernel", "0x").startswith("0x")]
print("launches", len(launches), "with kernel names", len(named))
for k, c in collections.Counter(e["args"].get("kernel") for e in launches).most_common(8):
    print("  %-60.60s %d" % (k, c))
syncs = [e for e in ev if "Synchronize" in e["name"] or e["name"].startswith("cuMemcpyDtoH")]
print("blocking calls", len(syncs), "total ms %.2f" % (sum(e["dur"] for e in syncs) / 1000))
PY
echo "== -p attach to a running job"
python3 tests/gpu/torch_loop.py --steps 3000 >/dev/null 2>&1 &
w=$!
sleep 8
build/gpubpf record -p "$w" -d 2s -o "$out/attach.json" 2>&1 | tail -3
wait "$w"
echo "wait status $?"
