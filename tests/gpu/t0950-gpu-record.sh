#!/usr/bin/env bash
# test-timeout: 420
# GPU machine check for `gpubpf record` on a PyTorch loop, where a GPU is
# lent: `bash tests/gpu/t0950-gpu-record.sh` as root there (tests/run.sh
# runs it too, and it skips without a GPU).  Needs build/gpubpf carried
# from the build machine and PyTorch.  Writes its findings to $OUT (or
# /tmp/gpubpf-gpu); the summary goes out as TAP diagnostics.
. "$(dirname "$0")/../lib.sh"
test_description "GPU machine: record a PyTorch loop (-- CMD, -p)"
gpu_setup /tmp/gpubpf-gpu
loop=(python3 tests/gpu/torch_loop.py)

{
	echo "== machine"
	uname -r
	nvidia-smi -L 2>&1 | head -2
	ls -l /sys/kernel/btf/vmlinux 2>&1
	echo "== libcuda"
	ldconfig -p | grep 'libcuda.so.1 ' | head -2
} | diag
check "gpubpf --version" "$GPUBPF" --version

real=$(ldconfig -p | awk '/libcuda.so.1 / { print $NF; exit }')
if [ -n "$real" ]; then
	"$GPUBPF" list -v --libcuda "$real" >"$out/probe-sites.txt" 2>&1
	ok "list -v on the real libcuda" test -s "$out/probe-sites.txt"
	diag "probe sites in the real libcuda (first instructions: emulated, single-stepped, endbr64)"
	tail -1 "$out/probe-sites.txt" | diag
	awk '!/^#/ && $4 ~ /^0x/ { insn = ""
		for (i = 6; i < NF; i++) insn = insn (insn ? " " : "") $i; c[insn " (" $NF ")"]++ }
		END { for (k in c) printf "  %-40s %d\n", k, c[k] }' "$out/probe-sites.txt" | sort | head -12 | diag
else
	skip "no libcuda.so.1 in the ldconfig cache"
fi

diag "== untraced"
for i in 1 2; do "${loop[@]}" --steps 300 2>&1 | tail -1 | diag; done
diag "== traced"
# the second with --autograd: its loop line against the first's is the probes' cost
for i in "" 2; do
	"$GPUBPF" record ${i:+--autograd} -o "$out/torch$i.json" -- "${loop[@]}" --steps 300 \
		>"$out/torch$i.txt" 2>&1
	ok "record ${i:+--autograd }-- CMD wrote a trace (torch$i.json)" test -s "$out/torch$i.json"
	grep -h '^torch_loop' "$out/torch$i.txt" | diag
	tail -3 "$out/torch$i.txt" | diag
done
diag "== summary"
python3 - "$out/torch.json" <<'PY' 2>&1 | diag
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

diag "== autograd nodes (record --autograd)"
# the autograd engine's device thread runs no Python: its launches are named
# by node (AddmmBackward0...) and traced to the forward line that made it
is "most launches of threads without Python name their autograd node and its forward line" \
	"$(python3 - "$out/torch2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("cat") == "cuda_api" and e["name"].startswith("cuLaunch")]
worker = [e for e in ev if e["args"].get("stack_attributed") or "stack" not in e["args"]]
node = [e for e in worker if "autograd_node" in e["args"]]
fwd = [e for e in node if "autograd_forward" in e["args"]]
sys.stderr.write("worker launches %d, with a node %d, with its forward line %d\n"
                 % (len(worker), len(node), len(fwd)))
print(len(worker) > 0 and len(node) >= 0.9 * len(worker) and len(fwd) >= 0.9 * len(node))
PY
)" True
"$GPUBPF" report --format json -o "$out/torch.rep.json" "$out/torch2.json"
python3 - "$out/torch.rep.json" <<'PY' 2>&1 | diag
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["processes"]:
    for x in p.get("autograd_nodes", [])[:12]:
        print("  %-28s %-40s %6d launches %8.3f GPU ms" % (x["node"], x["site"], x["launches"], x["gpu_ms"]))
PY
# the forward line is the loop's own (the model's layers are PyTorch's code)
ok "the report names backward nodes at the loop's forward line" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
xs = [x for p in r["processes"] for x in p.get("autograd_nodes", [])]
want = {"AddmmBackward0", "ReluBackward0", "NllLossBackward0", "LogSoftmaxBackward0"}
missing = want - {x["node"] for x in xs if "torch_loop.py:33" in (x["site"] or "")}
sys.exit("not named at the line: %s" % sorted(missing) if missing else 0)' "$out/torch.rep.json"

diag "== -p attach to a running job"
"${loop[@]}" --steps 3000 >/dev/null 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
sleep 8
"$GPUBPF" record -p "$w" -d 2s -o "$out/attach.json" >"$out/attach.txt" 2>&1
ok "record -p wrote a trace" test -s "$out/attach.json"
tail -3 "$out/attach.txt" | diag
wait "$w"
is "the job ran on to its end" "$?" 0
done_testing
