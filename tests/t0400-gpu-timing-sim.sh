#!/usr/bin/env bash
# GPU timing through the injection library, on the simulated GPU: the
# simulated driver's profiler hooks feed the same transport, correlation,
# tracks and flows as CUPTI does on a real GPU.  record loads the
# injection library's variant for the simulated driver by itself, as it
# sees the driver the process uses; GPUBPF_INJECTION_LIB overrides that.
. "$(dirname "$0")/lib.sh"
test_description "GPU timing: kernels, copies and memsets on stream tracks, linked to their calls"
require_bpf
require_sim
require_file "$SIMINJ"
export LD_LIBRARY_PATH="$SIMLIB"
unset GPUBPF_INJECTION_LIB
train=("$PY" "$GPUBPF_ROOT/sim/train.py")

# 1. record -- CMD: the command gets CUDA_INJECTION64_PATH, the GPU work
# shows up with exact links, names and durations.
check "record -- train.py" "$GPUBPF" record -o "$TMPD/t.json" -- \
	"${train[@]}" --steps 8 --truth "$TMPD/truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/t.json" "$TMPD/truth.json"
is "GPU tracks: the default stream and the loader thread's stream" "$(json_query "$TMPD/t.json" \
	'sorted({e["args"]["name"] for e in ev if e.get("name") == "thread_name" and e["args"]["name"].startswith("GPU")})')" \
	'["GPU 0 / stream 1", "GPU 0 / stream 2"]'
is "copies carry their bytes and direction" "$(json_query "$TMPD/t.json" \
	'sorted({(e["args"]["kind"], e["args"]["bytes"]) for e in ev if e.get("cat") == "gpu_memcpy"})')" \
	"$(json_query "$TMPD/truth.json" 'sorted({(c["args"]["kind"], c["args"]["bytes"]) for c in d if c["name"].startswith("cuMemcpy") and c["ret"] == 0})')"
is "one memset per memset call" "$(json_query "$TMPD/t.json" 'len([e for e in ev if e.get("cat") == "gpu_memset"])')" \
	"$(json_query "$TMPD/truth.json" 'len([c for c in d if c["name"].startswith("cuMemset")])')"
is "no GPU record lost" "$(json_query "$TMPD/t.json" 'd["gpubpf"]["gpu"]["dropped_events"]')" "{}"

# 2. graphs: every kernel of a graph launch links to that cuGraphLaunch
check "record cudacalls (graphs)" "$GPUBPF" record -o "$TMPD/c.json" -- \
	"$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/c.truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/c.json"
is "graph launches: each links to every kernel of its graph" "$(json_query "$TMPD/c.json" '
sorted(collections.Counter(
    next(h["name"] for h in ev if h.get("cat") == "cuda_api" and h["args"].get("correlation") == w["args"]["correlation"])
    for w in ev if w.get("cat") == "kernel" and "graph_node" in w["args"]).items())')" \
	'[["cuGraphLaunch", 2], ["cuGraphLaunch_ptsz", 2]]'

# 3. --no-device: host calls only, the command does not get the library
check "record --no-device" "$GPUBPF" record --no-device -o "$TMPD/n.json" -- \
	sh -c 'test -z "$CUDA_INJECTION64_PATH" && exec "$0" "$@"' "${train[@]}" --steps 2
is "--no-device: no GPU events" "$(json_query "$TMPD/n.json" \
	'len([e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")])')" 0

# 4. a job started once with the library, dormant, recorded twice with -p
# (stepping until both are done, however slow the machine)
CUDA_INJECTION64_PATH="$SIMINJ" \
	"${train[@]}" --steps 100 --no-thread --until-file "$TMPD/p.stop" 2>/dev/null &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libgpubpf_cupti "/proc/$w/maps"
for i in 1 2; do
	check "record -p, time $i" "$GPUBPF" record -p "$w" -d 600ms -o "$TMPD/p$i.json"
	cmp_ok "record -p, time $i: kernels captured" "$(json_query "$TMPD/p$i.json" \
		'len([e for e in ev if e.get("cat") == "kernel"])')" -gt 10
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" --edge-ms 250 "$TMPD/p$i.json"
done
touch "$TMPD/p.stop"
wait "$w"
is "the job ran to its end, recorded twice" "$?" 0

# 5. -p --no-inject on a job without the library says how to get GPU timing
# (without --no-inject, gpubpf loads it: tests/t0410-late-attach.sh)
"${train[@]}" --steps 0 --no-thread --until-file "$TMPD/never" 2>/dev/null &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
"$GPUBPF" record --no-inject -p "$w" -d 300ms -o "$TMPD/q.json" 2>"$TMPD/q.err"
like "-p without the library: says what to do" "$(cat "$TMPD/q.err")" \
	"pid $w: GPU timing needs libgpubpf_cupti.so loaded at start: run the job with CUDA_INJECTION64_PATH=.*libgpubpf_cupti.so; recording host calls only"
cmp_ok "-p without the library: host calls recorded" "$(json_query "$TMPD/q.json" \
	'len([e for e in ev if e.get("cat") == "cuda_api"])')" -gt 0
kill "$w" 2>/dev/null

# 6. the library for the driver: -- CMD gets the variant for the simulated
# driver, the shipped one otherwise, or what GPUBPF_INJECTION_LIB names
inj_of() {
	"$GPUBPF" record -q -o "$TMPD/i.json" "$@" -- sh -c 'echo "$CUDA_INJECTION64_PATH"'
}
is "-- CMD on the simulated driver: its variant" "$(inj_of)" "$(realpath "$SIMINJ")"
is "-- CMD, --libcuda the simulated driver: its variant" \
	"$(LD_LIBRARY_PATH= inj_of --libcuda "$SIMLIB/libcuda.so.1")" "$(realpath "$SIMINJ")"
is "-- CMD on another driver: the shipped library" "$(LD_LIBRARY_PATH= inj_of)" \
	"$(realpath "$GPUBPF_ROOT/build/libgpubpf_cupti.so")"
mkdir -p "$TMPD/named" "$TMPD/bin"
cp "$SIMINJ" "$TMPD/named/"
is "GPUBPF_INJECTION_LIB overrides the choice" \
	"$(GPUBPF_INJECTION_LIB="$TMPD/named/libgpubpf_cupti.so" inj_of)" \
	"$TMPD/named/libgpubpf_cupti.so"
GPUBPF_INJECTION_LIB="$TMPD/named/libgpubpf_cupti.so" check "record -- with GPUBPF_INJECTION_LIB" \
	"$GPUBPF" record -q -o "$TMPD/o.json" -- "${train[@]}" --steps 2
cmp_ok "GPUBPF_INJECTION_LIB: kernels captured" "$(json_query "$TMPD/o.json" \
	'len([e for e in ev if e.get("cat") == "kernel"])')" -gt 0
# a gpubpf without the variant beside it (installed) says so
cp "$GPUBPF" "$TMPD/bin/gpubpf"
"$TMPD/bin/gpubpf" record -q -o "$TMPD/b.json" -- true 2>"$TMPD/b.err"
is "the variant missing: said" "$(head -n1 "$TMPD/b.err")" \
	"gpubpf: GPU timing off: sim/libgpubpf_cupti.so not found beside gpubpf (use --cupti-lib PATH)"

# 7. -p of a process on the simulated driver, from a gpubpf whose own
# environment names no driver: the variant is loaded late all the same
"${train[@]}" --steps 0 --no-thread --until-file "$TMPD/never" 2>/dev/null &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
LD_LIBRARY_PATH= check "record -p, late attach by the target's driver" \
	"$GPUBPF" record -p "$w" -d 700ms -q -o "$TMPD/l.json"
cmp_ok "record -p, late attach: kernels captured" "$(json_query "$TMPD/l.json" \
	'len([e for e in ev if e.get("cat") == "kernel"])')" -gt 10
is "record -p: the library was loaded late" \
	"$(json_query "$TMPD/l.json" "sorted(d['gpubpf']['gpu']['late_attach'])")" "[\"$w\"]"
kill "$w" 2>/dev/null
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/t.json"
perfetto_ok "$TMPD/c.json"
done_testing
