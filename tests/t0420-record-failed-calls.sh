#!/usr/bin/env bash
# A failed driver call is marked in the trace and counted by the report:
# calls probed at return carry their result; launches, async memsets and
# copies (probed at entry only) get theirs from the injection library's
# API-exit callback.  Without GPU timing only the former are known.
. "$(dirname "$0")/lib.sh"
test_description "failed calls: args.ret and args.error in the trace, counted by report"
require_bpf
require_sim
# failcalls loads the simulated driver by its path (no LD_LIBRARY_PATH):
# the driver itself takes the injection library's variant for it
unset LD_LIBRARY_PATH

truth="$TMPD/truth.json"
check "record of a workload with failing calls exits 0" \
	"$GPUBPF" record -q -o "$TMPD/f.json" -- "$TESTBIN/failcalls" "$SIMLIB/libcuda.so.1" "$truth"

# per call name: [calls, calls marked failed, their ret values, their error names]
per_name='json.dumps({n: [len([e for e in ev if e.get("name") == n]),
	len([e for e in ev if e.get("name") == n and "error" in e["args"]]),
	sorted({e["args"]["ret"] for e in ev if e.get("name") == n and "error" in e["args"]}),
	sorted({e["args"]["error"] for e in ev if e.get("name") == n and "error" in e["args"]})]
	for n in sorted(TRUTH)}, sort_keys=True)'
expect='json.dumps({n: [c["total"], c["failed"], [c["ret"]] if c["failed"] else [],
	["CUDA_ERROR_INVALID_VALUE"] if c["failed"] else []]
	for n, c in sorted(d["calls"].items())}, sort_keys=True)'
names=$(json_query "$truth" 'json.dumps(sorted(d["calls"]))')
is "every call is in the trace, each failed one marked with its ret and error name" \
	"$(json_query "$TMPD/f.json" "${per_name//TRUTH/$names}")" "$(json_query "$truth" "$expect")"
is "the workload's failures: 5 launches, 1 launch_ex, 3 memsets, 3 copies" \
	"$(json_query "$truth" 'sum(c["failed"] for c in d["calls"].values())')" 12

check "report --format json" "$GPUBPF" report --format json -o "$TMPD/r.json" "$TMPD/f.json"
pid=$(json_query "$truth" 'd["pid"]')
is "report: failed calls counted" "$(json_query "$TMPD/r.json" \
	"[p['failed_calls'] for p in d['processes'] if p['pid'] == $pid]")" "[12]"
is "report: per call name and error" "$(json_query "$TMPD/r.json" \
	"sorted((x['name'], x['error'], x['count']) for p in d['processes'] if p['pid'] == $pid for x in p['errors'])")" \
	"$(json_query "$truth" 'sorted([n, "CUDA_ERROR_INVALID_VALUE", c["failed"]] for n, c in d["calls"].items() if c["failed"])')"
check "report (text)" "$GPUBPF" report "$TMPD/f.json"
like "report text: failed driver calls" "$(cat "$TMPD/.check.out")" \
	"failed driver calls: 12.*5  cuLaunchKernel +CUDA_ERROR_INVALID_VALUE"

# without the injection library, entry-only calls carry no result
check "record --no-device" "$GPUBPF" record -q --no-device -o "$TMPD/n.json" -- \
	"$TESTBIN/failcalls" "$SIMLIB/libcuda.so.1" "$TMPD/truth2.json"
is "--no-device: only the calls probed at return are marked failed" "$(json_query "$TMPD/n.json" \
	'sorted(e["name"] for e in ev if "error" in e.get("args", {}))')" '["cuMemcpyHtoD_v2", "cuMemsetD32_v2"]'
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/f.json"
done_testing
