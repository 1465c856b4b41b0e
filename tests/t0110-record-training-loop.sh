#!/usr/bin/env bash
# The Python training loop on the simulated GPU, recorded from its start:
# every call of both threads with its arguments, and blocking syncs that
# last until the simulated kernels they waited for are done.
. "$(dirname "$0")/lib.sh"
test_description "record -- python train.py: counts, threads, arguments, sync durations"
require_bpf
require_sim
probed=$(probed_list)

export LD_LIBRARY_PATH="$SIMLIB"
check "record exits 0 with the workload" \
	"$GPUBPF" record -o "$TMPD/train.json" -- \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 12 --sync-every 4 --truth "$TMPD/truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --sim-syncs \
	"$TMPD/train.json" "$TMPD/truth.json" "$probed"
# the importer gives back the model record wrote: two threads, stacks, scopes
check "the trace imported and exported again is the same file" \
	"$GPUBPF_ROOT/build/tests/test_trace_import" "$TMPD/train.json"

is "two threads made calls" "$(json_query "$TMPD/train.json" \
	'len({e["tid"] for e in ev if e.get("cat") == "cuda_api"})')" 2
is "the launch thread's kernels are named" "$(json_query "$TMPD/train.json" \
	'sorted({e["args"]["kernel"] for e in ev if e.get("name", "").startswith("cuLaunchKernel")})')" \
	'["attention_bwd", "attention_fwd", "linear_bwd_data", "linear_bwd_weight", "linear_fwd", "loss_fwd", "prefetch", "relu_fwd", "sgd_update"]'
is "a .item()-style sync every 4 steps (plus the set-up copies)" "$(json_query "$TMPD/train.json" \
	'len([e for e in ev if e.get("name") == "cuMemcpyDtoH_v2"])')" \
	"$(json_query "$TMPD/truth.json" 'len([c for c in d if c["name"] == "cuMemcpyDtoH_v2"])')"
is "process and thread names are metadata events" "$(json_query "$TMPD/train.json" \
	'sorted({e["name"] for e in ev if e["ph"] == "M"})')" '["process_name", "thread_name", "thread_sort_index"]'
is "every calling thread named, and its process (thread names come from /proc or the exit record)" \
	"$(json_query "$TMPD/train.json" '[sorted({e["args"]["name"] for e in ev if e.get("name") == "thread_name"
		and e["tid"] in {c["tid"] for c in ev if c.get("cat") == "cuda_api"}}),
		len({e["tid"] for e in ev if e.get("name") == "thread_name"} & {c["tid"] for c in ev if c.get("cat") == "cuda_api"}),
		sorted({e["args"]["name"] for e in ev if e.get("name") == "process_name"})]')" \
	'[["python3"], 2, ["python3"]]'
is "no event lost" "$(json_query "$TMPD/train.json" 'd["gpubpf"]["dropped_total"]')" 0
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/train.json"
done_testing
