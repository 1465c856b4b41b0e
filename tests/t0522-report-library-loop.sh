#!/usr/bin/env bash
# gpubpf report on a recorded job whose training loop library code runs
# (tests/py/trainer_workload.py: one user line calls Trainer.train() of a
# library under a site-packages directory, which calls back into the
# user's compute_loss), on every CPython 3.8 to 3.15 found: the loop and
# its phases are the library's, and the calls in it are named by the
# library's lines (the collate's launch, the loss's `.item()`), never by
# the one user line above the loop.  Names are compared without the class
# (3.8-3.10 frames have no qualified names).
. "$(dirname "$0")/lib.sh"
test_description "report: a training loop that library code runs, recorded"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
wl="$GPUBPF_ROOT/tests/py/trainer_workload.py"
lib="$GPUBPF_ROOT/tests/py/site-packages/minitrainer.py"

cat >"$TMPD/check.py" <<'PYEOF'
import json, sys
rep = json.load(open(sys.argv[1]))
v = sys.argv[4]


def line(path, mark):
    src = open(path).read().splitlines()
    return next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# " + mark))


wl, lib = sys.argv[2], sys.argv[3]
PREP, LOG = "minitrainer.py:%d)" % line(lib, "PREP_LINE"), "minitrainer.py:%d)" % line(lib, "LOG_LINE")
TRAIN = "trainer_workload.py:%d)" % line(wl, "TRAIN_LINE")


def ok(cond, desc, *diag):
    print(("ok - " if cond else "not ok - ") + v + ": " + desc)
    if not cond:
        for d in diag:
            print("# " + str(d))


def func(site):
    """"Trainer._log (/x/minitrainer.py:50)" -> "_log", or None"""
    return site.split(" (")[0].split(".")[-1] if site else None


p = rep["processes"][0]
it = p["iterations"]
loop = it.get("loop_function") or ""
ok(it["detected"] and it["steps"] == 7 and it["kernels_per_step"] == 6 and
   loop.split(" (")[0].split(".")[-1] == "train" and loop.endswith("/site-packages/minitrainer.py)"),
   "the loop is the library's Trainer.train, 7 steps of 6 launches", it)
ph = [(x["phase"].split(".")[-1], x["launches_median"]) for x in it["phases"]]
ok(ph == [("_prepare_inputs", 1), ("training_step", 3), ("optimizer_step", 2), ("_log", 0),
          ("outside any phase", 0)], "its phases, by what each loop line calls", ph)
ok((it.get("anchor_site") or "").endswith("/" + PREP[:-1]), "each step starts at the collate's launch, its line",
   it["anchor_site"], PREP)
f = p["findings"]
hb = [x for x in f if x["kind"] == "host_bound" and x["cost_ms"] > 7 * 5]
ok(len(hb) == 1 and func(hb[0]["site"]) == "_prepare_inputs" and hb[0]["site"].endswith(PREP),
   "host-bound (over 5 ms in each of 7 gaps) at the collate's launch only", f, PREP)
sync = [x for x in f if x["kind"] == "sync"]
ok(len(sync) == 1 and func(sync[0]["site"]) == "_log" and sync[0]["site"].endswith(LOG),
   "a sync finding at the .item() in _log", sync, LOG)
h = p["sync_hotspots"][0]
ok((func(h["function"]), h["site"].split("/")[-1] + ")", h["call"], h["count"]) ==
   ("_log", LOG, "cuMemcpyDtoH_v2", 8), "the costliest sync hotspot: 8 copies at _log's line", h, LOG)
causes = p["devices"][0]["idle"]["host_bound_causes"]
top = max(causes, key=lambda c: c["ms"])
# time.sleep() is a select() before 3.11: io
ok(top["cause"] in ("sleep", "io") and func(top["site"]) == "_prepare_inputs",
   "host-bound time mostly asleep in _prepare_inputs (the collate)", top)
sites = [x["site"] for x in f] + [c["site"] for c in causes] + \
    [x["function"] + " (" + x["site"] + ")" for x in p["sync_hotspots"]]
ok(not [s for s in sites if s and s.endswith(TRAIN)],
   "no finding, cause or hotspot at the user line calling train()", [s for s in sites if s], TRAIN)
PYEOF

found=0
for v in 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15; do
	py=$(cpythons $v | head -1)
	[[ -n "$py" ]] || continue
	found=1
	check "$v: record" "$GPUBPF" record --quiet -o "$TMPD/$v.json" -- "$py" "$wl" || continue
	check "$v: report" "$GPUBPF" report --format json -o "$TMPD/$v.rep.json" "$TMPD/$v.json" || continue
	tap_from "$PY" "$TMPD/check.py" "$TMPD/$v.rep.json" "$wl" "$lib" "$v"
done
((found)) || skip_all "no CPython 3.8 to 3.15 found"
done_testing
