#!/usr/bin/env bash
# Probes on each entry prologue shape (bench/libcuda_bench.c): a function
# that begins with endbr64 is probed on the instruction after it, and its
# calls are recorded exactly as on the other shapes: every call, the
# stack arguments of cuLaunchKernel as passed, and the return probe of
# cuStreamSynchronize with its return code and a duration.
. "$(dirname "$0")/lib.sh"
test_description "record on xor / sub / endbr64 / push entries; gpubpf list -v"
require_bpf
BENCH="$GPUBPF_ROOT/build/bench"
require_file "$BENCH/callcost"

N=300
# calls_as_passed TRACE NAME: "COUNT as passed" when the calls of NAME, in
# time order, carry callcost's arguments: call i on stream i & 7, launches
# of kernel 0x1000 on a 128x1x1 grid of 256x1x1 blocks, syncs returning 0
calls_as_passed() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
calls = sorted((e for e in ev if e.get("name") == sys.argv[2]), key=lambda e: e["ts"])
bad = []
for i, e in enumerate(calls):
    a = e["args"]
    want = {"stream": hex(i & 7)}
    if sys.argv[2] == "cuLaunchKernel":
        want.update(kernel="0x1000", grid=[128, 1, 1], block=[256, 1, 1], shared_mem=0)
    else:
        want.update(ret=0)
        if e.get("dur", -1) < 0:
            bad.append((i, "no duration"))
    bad += [(i, k, a.get(k), v) for k, v in want.items() if a.get(k) != v]
print("%d %s" % (len(calls), "as passed" if not bad else "differ: %s" % bad[:3]))
PYEOF
}
# shape -> "offset of cuLaunchKernel's probe (hex), probed instruction, kernel"
declare -A SITE=(
	[xor]="0x1100 xor %eax,%eax single-step"
	[sub]="0x1100 sub \$8,%rsp single-step"
	[endbr]="0x1104 push %rbp emulated"
	[push]="0x1100 push %rbp emulated"
)
for shape in xor sub endbr push; do
	lib="$BENCH/$shape/libcuda.so.1"
	want=${SITE[$shape]}
	# list -v prints "offset skip insn... kernel"; compare offset, instruction and kernel
	got=$("$GPUBPF" list -v --libcuda "$lib" | awk '$1 == "cuLaunchKernel" {
		insn = ""; for (i = 6; i < NF; i++) insn = insn (insn ? " " : "") $i; print $4, insn, $NF }')
	is "$shape: list -v places cuLaunchKernel's probe" "$got" "$want"

	check "$shape: launches recorded" "$GPUBPF" record -q --no-device --libcuda "$lib" \
		-o "$TMPD/$shape-launch.json" -- "$BENCH/callcost" -l "$lib" -f launch -n $N
	is "$shape: every launch, with its stack arguments (stream = i & 7, grid, block)" \
		"$(calls_as_passed "$TMPD/$shape-launch.json" cuLaunchKernel)" "$N as passed"
	check "$shape: syncs recorded" "$GPUBPF" record -q --no-device --libcuda "$lib" \
		-o "$TMPD/$shape-sync.json" -- "$BENCH/callcost" -l "$lib" -f sync -n $N
	is "$shape: every sync, with its argument, return code and duration (return probe)" \
		"$(calls_as_passed "$TMPD/$shape-sync.json" cuStreamSynchronize)" "$N as passed"
done
done_testing
