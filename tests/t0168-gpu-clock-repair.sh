#!/usr/bin/env bash
# A GPU clock that drifts against the host's (CUPTI's conversion, as seen on
# an H200 after a re-attach: kernels up to 10 us before their launches) is
# repaired when a trace is finished: every kernel, copy and memset of that
# process and device moves later by the least that puts none before its
# call, the trace says how many moved and by how much, and nothing else
# changes.  A recorded trace is given such a drift here and read back
# (convert, as record finishes its own model).
. "$(dirname "$0")/lib.sh"
test_description "GPU clock repair: GPU work that drifted before its calls is put back after them"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"

check "record a training loop" "$GPUBPF" record -q -o "$TMPD/a.json" -- \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 200 --sync-every 4
is "the recording needs no repair" "$(json_query "$TMPD/a.json" \
	'[d["gpubpf"]["gpu"]["clock_repaired_events"], d["gpubpf"]["gpu"]["max_clock_repair_us"]]')" \
	"[0, 0.0]"

# its GPU's clock made 20 us/s slow: the GPU work of the last second starts
# up to ~30 us before its calls
"$PY" - "$TMPD/a.json" "$TMPD/drift.json" >"$TMPD/lead.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
t0 = min(e["ts"] for e in gpu)
for e in gpu:
    end = e["ts"] + e["dur"]
    e["ts"] = round(e["ts"] - 20e-6 * (e["ts"] - t0), 3)
    e["dur"] = round(end - 20e-6 * (end - t0) - e["ts"], 3)
calls = {(e["pid"], e["args"]["correlation"]): e["ts"] for e in ev
         if e.get("cat") == "cuda_api" and "correlation" in e["args"]}
leads = [calls[(e["pid"], e["args"]["correlation"])] - e["ts"] for e in gpu
         if (e["pid"], e["args"]["correlation"]) in calls]
print(sum(1 for l in leads if l > 0), "%.3f" % (max(leads) + 0.001))
json.dump(d, open(sys.argv[2], "w"))
PY
read -r nlead maxlead <"$TMPD/lead.txt"
ok "the drift puts GPU work before its calls ($nlead records, by up to $maxlead us)" \
	test "$nlead" -gt 100
check "convert the drifted trace" "$GPUBPF" convert "$TMPD/drift.json" "$TMPD/fixed.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/fixed.json"
is "the trace says how far the repair moved GPU work: the largest lead + 1 ns" \
	"$(json_query "$TMPD/fixed.json" '"%.3f" % d["gpubpf"]["gpu"]["max_clock_repair_us"]')" \
	"$maxlead"
n=$(json_query "$TMPD/fixed.json" 'd["gpubpf"]["gpu"]["clock_repaired_events"]')
ok "and how many records moved: at least those that led ($n >= $nlead)" test "$n" -ge "$nlead"
is "nothing is counted as skewed any more" \
	"$(json_query "$TMPD/fixed.json" 'd["gpubpf"]["gpu"]["clock_skewed_events"]')" 0
# the shift is the least that restores the order: the GPU work that led
# its call most now starts 1 ns after it
is "the smallest call-to-start lag left is 1 ns" "$("$PY" - "$TMPD/fixed.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
calls = {(e["pid"], e["args"]["correlation"]): e["ts"] for e in ev
         if e.get("cat") == "cuda_api" and "correlation" in e["args"]}
lags = [e["ts"] - calls[(e["pid"], e["args"]["correlation"])] for e in ev
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and (e["pid"], e["args"]["correlation"]) in calls]
print("%.3f" % min(lags))
PY
)" 0.001
# each moves by the shift at its start and its end, which differ by the
# drift over its duration: under 1e-4 of it
is "durations are kept (within 1e-4 and 1 ns)" "$("$PY" - "$TMPD/drift.json" "$TMPD/fixed.json" <<'PY'
import json, sys
def durs(p):
    return sorted((e["args"]["correlation"], e["dur"]) for e in json.load(open(p))["traceEvents"]
                  if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
a, b = durs(sys.argv[1]), durs(sys.argv[2])
print(len(a) == len(b) and
      all(x[0] == y[0] and abs(x[1] - y[1]) <= 1e-4 * x[1] + 0.001 for x, y in zip(a, b)))
PY
)" True
is "host calls are untouched" "$("$PY" - "$TMPD/drift.json" "$TMPD/fixed.json" <<'PY'
import json, sys
def calls(p):
    return sorted((e["tid"], e["ts"], e["dur"]) for e in json.load(open(p))["traceEvents"]
                  if e.get("cat") == "cuda_api")
print(calls(sys.argv[1]) == calls(sys.argv[2]))
PY
)" True

# read back again, and through .pftrace: nothing more to repair, the counts kept
check "convert the repaired trace again" "$GPUBPF" convert "$TMPD/fixed.json" "$TMPD/again.json"
check "the same file: a repaired trace needs no more" cmp "$TMPD/fixed.json" "$TMPD/again.json"
check "convert the drifted trace to .pftrace" "$GPUBPF" convert "$TMPD/drift.json" "$TMPD/fixed.pftrace"
check "and that back to .json" "$GPUBPF" convert "$TMPD/fixed.pftrace" "$TMPD/back.json"
check "the .json the repair wrote directly" cmp "$TMPD/fixed.json" "$TMPD/back.json"
perfetto_ok "$TMPD/fixed.pftrace"
done_testing
