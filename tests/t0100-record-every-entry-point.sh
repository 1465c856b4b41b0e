#!/usr/bin/env bash
# Every probed entry point, called once by tests/bin/cudacalls with known
# arguments, is captured with those arguments: against the simulated driver
# (calls succeed) and against NVIDIA's stub libcuda.so (a real NVIDIA
# binary whose calls all fail with CUDA_ERROR_STUB_LIBRARY).
. "$(dirname "$0")/lib.sh"
test_description "record -- CMD captures every entry point with its arguments"
require_bpf
require_sim
probed=$(probed_list)

record_calls() { # LIB NAME [gpubpf options...]
	local lib=$1 name=$2
	shift 2
	check "$name: record exits with the command's status" \
		"$GPUBPF" record "$@" -o "$TMPD/$name.json" -- \
		"$TESTBIN/cudacalls" "$lib" "$TMPD/$name.truth.json"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" \
		"$TMPD/$name.json" "$TMPD/$name.truth.json" "$probed"
}

record_calls "$SIMLIB/libcuda.so.1" sim --libcuda "$SIMLIB/libcuda.so.1"
is "sim: all calls succeeded" "$(json_query "$TMPD/sim.json" \
	'sorted({e["args"]["ret"] for e in ev if e.get("cat") == "cuda_api" and "ret" in e["args"]} - {600})')" "[0]"

# a process gone before its threads' calls were decoded (their states come
# first) is named as its threads exited: before, it read "?", unnamed
is "sim: the process and its main thread named as they exited" "$(json_query "$TMPD/sim.json" \
	'sorted({(e["name"], e["args"]["name"]) for e in ev if e.get("ph") == "M" and
	 e.get("name") in ("process_name", "thread_name") and e["tid"] == e["pid"]})')" \
	'[["process_name", "cudacalls"], ["thread_name", "cudacalls"]]'

# a link per entry point and return, as on a kernel without usable
# uprobe_multi links: the same calls, the same arguments
GPUBPF_TEST_NO_MULTI=1 record_calls "$SIMLIB/libcuda.so.1" sim-links -v \
	--libcuda "$SIMLIB/libcuda.so.1"
like "sim-links: attached a link per entry point" "$(grep 'gpubpf: uprobes:' "$TMPD/.check.out")" \
	"^gpubpf: uprobes: a link per entry point and return "
# from Linux 6.10 on, uprobe_multi links filter a pid by process (earlier,
# the stable series that took the fix do too: either answer is right there)
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if ((kmaj > 6 || (kmaj == 6 && ${kmin%%[!0-9]*} >= 10))); then
	like "Linux $kmaj.${kmin%%[!0-9]*}: two uprobe_multi links a library" \
		"$("$GPUBPF" record -v -o "$TMPD/v.json" -- true 2>&1 | grep 'gpubpf: uprobes:')" \
		"^gpubpf: uprobes: two uprobe_multi links a library"
else
	skip "Linux $kmaj.${kmin%%[!0-9]*}: its uprobe_multi links may filter by thread" 1
fi

# the library a command loads is found through its LD_LIBRARY_PATH
LD_LIBRARY_PATH="$SIMLIB" record_calls "$SIMLIB/libcuda.so.1" sim-discovered

if [[ -r "$STUBLIB/libcuda.so" ]]; then
	record_calls "$STUBLIB/libcuda.so" stub --libcuda "$STUBLIB/libcuda.so"
	is "stub: every probed return carries CUDA_ERROR_STUB_LIBRARY" "$(json_query "$TMPD/stub.json" \
		'sorted({e["args"]["ret"] for e in ev if e.get("cat") == "cuda_api" and "ret" in e["args"]})')" "[34]"
	is "stub: every probed entry point captured" "$(json_query "$TMPD/stub.json" \
		'len({e["name"] for e in ev if e.get("cat") == "cuda_api"})')" \
		"$(json_query "$TMPD/stub.truth.json" 'len({c["name"] for c in d["calls"] if c["phase"] == "probe" or c["name"] == "cuInit"})')"
else
	skip "no CUDA stub libcuda at $STUBLIB" 6
fi
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/sim.json"
done_testing
