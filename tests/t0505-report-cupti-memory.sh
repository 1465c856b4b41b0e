#!/usr/bin/env bash
# gpubpf report on a synthetic trace with CUPTI memory records (cat
# "gpu_memory"): device memory from the records alone, per device, the
# calls not counted again, pinned host memory left out; exact figures.
. "$(dirname "$0")/lib.sh"
test_description "report: device memory from CUPTI memory records, exact"
require_gpubpf
"$PY" - "$GPUBPF_ROOT/tests" "$TMPD/m.json" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import importlib.util
spec = importlib.util.spec_from_file_location("gen", sys.argv[1] + "/py/gen_report_trace.py")
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)

def rec(pid, name, ts, addr, nbytes, kind, device, corr):
    lane = 0xfffff
    return {"ph": "i", "s": "t", "cat": "gpu_memory", "name": name, "pid": pid,
            "tid": 0x40000000 + (device << 20) + lane, "ts": ts,
            "args": {"address": hex(addr), "bytes": nbytes, "memory_kind": kind,
                     "device": device, "stream": 0, "correlation": corr}}

P = 300
ev = [g.meta(P, "cupti"),
      g.api(P, "cuLaunchKernel", 0, 2, correlation=1, kernel="k"),
      g.gpu(P, "kernel", "k", 1, 10, 7, 1, device=1),
      # the call and its record: one allocation
      g.api(P, "cuMemAlloc_v2", 100, 5, stack=g.stack("step (/home/u/train.py:50)"),
            ptr="0xa000", bytes=1000, correlation=20),
      rec(P, "alloc", 102, 0xa000, 1000, "device", 1, 20),
      g.api(P, "cuMemAlloc_v2", 200, 5, stack=g.stack("step (/home/u/train.py:60)"),
            ptr="0xb000", bytes=4000, correlation=21),
      rec(P, "alloc", 203, 0xb000, 4000, "device", 1, 21),
      # pinned host memory: not device memory
      rec(P, "alloc", 250, 0xc000, 99999, "pinned", 1, 22),
      # a library's allocation on device 0 that no traced call made
      rec(P, "alloc", 260, 0xd000, 700, "device", 0, 23),
      g.api(P, "cuMemFree_v2", 300, 5, ptr="0xb000", correlation=24),
      rec(P, "free", 301, 0xb000, 4000, "device", 1, 24),
      rec(P, "free", 310, 0xc000, 99999, "pinned", 1, 25)]
g.write(sys.argv[2], ev)
PYEOF
check "report --format json" "$GPUBPF" report --format json -o "$TMPD/m.rep.json" \
	--memory-svg "$TMPD/m.svg" "$TMPD/m.json"
P='[p for p in d["processes"] if p["pid"] == 300][0]'
is "memory per device from the records, each allocation once" \
	"$(json_query "$TMPD/m.rep.json" "[(m['device'], m['allocs'], m['frees'], m['peak_bytes'], round(m['peak_ms'], 6), m['peak_site'], m['peak_function'], m['peak_call'], m['peak_alloc_bytes'], m['end_bytes']) for m in $P['memory']]")" \
	'[[0, 1, 0, 700, 0.26, null, null, "alloc", 700, 700], [1, 2, 1, 5000, 0.203, "/home/u/train.py:60", "step", "cuMemAlloc_v2", 4000, 1000]]'
is "svg: the device with the highest peak, one block per allocation" "$(grep -c '<title>' "$TMPD/m.svg")" 2
like "text: both devices" "$("$GPUBPF" report "$TMPD/m.json")" \
	"device memory \(GPU 0\): peak .*device memory \(GPU 1\): peak .* by cuMemAlloc_v2 .*step \(/home/u/train.py:60\)"
check "merge keeps the records" "$GPUBPF" merge -o "$TMPD/merged.json" "$TMPD/m.json"
is "merged trace: memory instants kept" "$(grep -c '"gpu_memory"' "$TMPD/merged.json")" 6
done_testing
