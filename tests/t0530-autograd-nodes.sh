#!/usr/bin/env bash
# PyTorch's autograd nodes: each driver call made while the engine runs a
# backward node carries the node's class and the Python stack of the
# forward call that made it, and the report groups backward work by node
# and forward line.  The workload (tests/py/autograd_workload.py) runs
# Debian's CPU PyTorch on the simulated driver: saved-tensor hooks launch a
# kernel each time a node unpacks what its forward op saved, so every
# such launch runs inside a known node made at a known line.
. "$(dirname "$0")/lib.sh"
test_description "autograd nodes: backward work named and traced to its forward line"
require_bpf
require_sim
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
tv=$("$TORCH_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
	skip_all "needs PyTorch: $TORCH_PY cannot import torch (scripts/install-deps.sh installs python3-torch)"
export LD_LIBRARY_PATH="$SIMLIB"
unset CUDA_INJECTION64_PATH GPUBPF_INJECTION_LIB
wl="$GPUBPF_ROOT/tests/py/autograd_workload.py"
mul=$(grep -n '# MUL_LINE$' "$wl" | cut -d: -f1)
exp=$(grep -n '# EXP_LINE$' "$wl" | cut -d: -f1)
model_line=$(grep -n 'x = layer(x, w)$' "$wl" | cut -d: -f1)
main_line=$(grep -n 'loss = model(x, ws)$' "$wl" | cut -d: -f1)
run=("$TORCH_PY" "$wl" --lib-dir "$GPUBPF_ROOT/sim")
diag "PyTorch $tv"

# launches per (kernel, node, innermost frame of the forward stack)
per_launch='sorted(["%s|%s|%s" % k, n] for k, n in collections.Counter((e["args"]["kernel"], e["args"].get("autograd_node"), (e["args"].get("autograd_forward") or [None])[0]) for e in ev if e.get("cat") == "cuda_api" and e["name"] == "cuLaunchKernel").items())'

# 1. record -- CMD: three steps, every node made and run inside the recording
check "record --autograd -- python, to .json and .pftrace" "$GPUBPF" record --quiet --autograd -o "$TMPD/r.json" \
	-o "$TMPD/r.pftrace" -- "${run[@]}" --steps 3 --truth "$TMPD/t.json"
is "the workload's truth: the nodes its lines made, the launches their backward made" \
	"$(json_query "$TMPD/t.json" '[d["made"], d["launches"]]')" \
	"[{\"$mul\": \"MulBackward0\", \"$exp\": \"ExpBackward0\"}, {\"$exp\": 6, \"$mul\": 12}]"
is "each launch inside a node names it and the forward line that made it; forward's none" \
	"$(json_query "$TMPD/r.json" "$per_launch")" \
	"[[\"forward_step|None|None\", 3], [\"unpack_L$mul|MulBackward0|layer ($wl:$mul)\", 12], [\"unpack_L$exp|ExpBackward0|layer ($wl:$exp)\", 6]]"
is "the forward stack is whole: layer, under model's loop, under main" \
	"$(json_query "$TMPD/r.json" 'sorted({tuple(f.split(" (")[0] + ":" + f.rsplit(":", 1)[1].rstrip(")") for f in e["args"]["autograd_forward"][:3]) for e in ev if "autograd_forward" in e.get("args", {})})')" \
	"[[\"layer:$mul\", \"model:$model_line\", \"main:$main_line\"], [\"layer:$exp\", \"model:$model_line\", \"main:$main_line\"]]"
is "every call inside a node has it (a first unpack also looks its kernel up), none outside" \
	"$(json_query "$TMPD/r.json" 'sorted(["%s|%s" % k, n] for k, n in collections.Counter((e["name"], e["args"].get("autograd_node")) for e in ev if e.get("cat") == "cuda_api" and e["name"] in ("cuLaunchKernel", "cuModuleGetFunction")).items())')" \
	'[["cuLaunchKernel|ExpBackward0", 6], ["cuLaunchKernel|MulBackward0", 12], ["cuLaunchKernel|None", 3], ["cuModuleGetFunction|ExpBackward0", 1], ["cuModuleGetFunction|MulBackward0", 1], ["cuModuleGetFunction|None", 1]]'

# the report, from either format: backward work by node and forward line, exact
want="[[\"MulBackward0\", \"$wl:$mul\", \"layer\", 13, 12, 0.24], [\"ExpBackward0\", \"$wl:$exp\", \"layer\", 7, 6, 0.12]]"
for f in r.json r.pftrace; do
	check "report --format json $f" "$GPUBPF" report --format json -o "$TMPD/$f.rep" "$TMPD/$f"
	is "$f: backward by node: calls, launches and their GPU time (12 x 20 us, 6 x 20 us)" \
		"$(json_query "$TMPD/$f.rep" '[[x["node"], x["site"], x["function"], x["calls"], x["launches"], round(x["gpu_ms"], 6)] for x in d["processes"][0]["autograd_nodes"]]')" \
		"$want"
done
"$GPUBPF" report "$TMPD/r.json" >"$TMPD/r.txt"
like "text: the section, the costliest node first" "$(cat "$TMPD/r.txt")" \
	"backward work by PyTorch autograd node, and the forward line that made it:
 +GPU ms +launches +calls +node +forward call
 +0\\.240 +12 +13 +MulBackward0 +layer \\($wl:$mul\\)
 +0\\.120 +6 +7 +ExpBackward0 +layer \\($wl:$exp\\)"

if tp=$(trace_processor); then
	q() { "$tp" query "$1" <<<"$2" 2>/dev/null | tail -n +2; }
	is "Perfetto: the node of each call inside one, as an argument" \
		"$(q "$TMPD/r.pftrace" "select a.display_value, count(*) from slice s join args a using (arg_set_id)
			where a.key = 'debug.autograd_node' group by 1 order by 1")" \
		'"ExpBackward0",7
"MulBackward0",13'
	like "Perfetto: and the forward stack, innermost frame first" \
		"$(q "$TMPD/r.pftrace" "select distinct a.display_value from slice s join args a using (arg_set_id)
			where a.key = 'debug.autograd_forward' order by 1")" \
		"^\"layer \\($wl:$mul\\)
model \\($wl:$model_line\\)
main \\($wl:$main_line\\)"
else
	skip "Perfetto's trace_processor_shell not found (set TRACE_PROCESSOR)" 2
fi

# 2. record -p, attached between the first step's forward and its backward:
# that step's nodes were made before the recording (node known, line not)
"${run[@]}" --steps 3 --wait-file "$TMPD/go" --truth "$TMPD/tp.json" 2>"$TMPD/w.err" &
w=$!
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
wait_for_cmd 20 grep -q libtorch_cpu "/proc/$w/maps"
"$GPUBPF" record --autograd -p "$w" -d 60s -o "$TMPD/p.json" 2>"$TMPD/g.err" &
g=$!
wait_recording "$TMPD/g.err"
touch "$TMPD/go"
wait "$w"
is "the workload ran to its end" "$?" 0
wait "$g"
is "record -p ends with it, exit 0" "$?" 0
# (launches by node and line: forward_step's name comes from a lookup before the recording)
is "first step's nodes: named, line unknown; the later steps': both" \
	"$(json_query "$TMPD/p.json" 'sorted(["%s|%s" % k, n] for k, n in collections.Counter((e["args"].get("autograd_node"), (e["args"].get("autograd_forward") or [None])[0]) for e in ev if e.get("cat") == "cuda_api" and e["name"] == "cuLaunchKernel").items())')" \
	"[[\"ExpBackward0|None\", 2], [\"ExpBackward0|layer ($wl:$exp)\", 4], [\"MulBackward0|None\", 4], [\"MulBackward0|layer ($wl:$mul)\", 8], [\"None|None\", 2]]"
"$GPUBPF" report "$TMPD/p.json" >"$TMPD/p.txt"
like "text: work of nodes made before the recording is said so" "$(cat "$TMPD/p.txt")" \
	"MulBackward0 +made before the recording, or outside Python"

# 3. without --autograd nothing is probed in libtorch; --autograd needs Python stacks
check "record without --autograd" "$GPUBPF" record --quiet -o "$TMPD/n.json" -- "${run[@]}" \
	--steps 1 --truth "$TMPD/tn.json"
is "no call names a node" "$(json_query "$TMPD/n.json" \
	'len([e for e in ev if "autograd_node" in e.get("args", {})])')" 0
"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 1 --wait-file "$TMPD/go2" --truth "$TMPD/t2.json" \
	2>/dev/null &
w2=$!
wait_for_cmd 20 grep -q libcuda "/proc/$w2/maps"
"$GPUBPF" record --autograd -p "$w2" -d 300ms -o "$TMPD/q.json" 2>"$TMPD/q.err"
like "--autograd -p on a job without PyTorch: said" "$(cat "$TMPD/q.err")" \
	"gpubpf: pid $w2 maps no libtorch: no autograd nodes"
touch "$TMPD/go2"
wait "$w2"
out="$TMPD/none"
mkdir -p "$out"
expect_error "--autograd without Python stacks" 1 "--autograd needs Python stacks" \
	"$GPUBPF" record --autograd --stack none -o "$out/x.json" -- true
done_testing
