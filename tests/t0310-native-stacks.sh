#!/usr/bin/env bash
# Native stacks (--stack native, --stack python,native): user-space return
# addresses captured by eBPF, named from the ELF symbols of the mapped
# files with C++ names demangled.  A C++ program built with frame pointers
# has exactly known stacks; a C program without frame pointers is traced
# as before, its stacks short; Python keeps its own stacks beside them.
. "$(dirname "$0")/lib.sh"
test_description "native stacks: named frames in order, no frame pointers, with Python"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
LIB="$SIMLIB/libcuda.so.1"

# "symbol+0x1f (file)" -> "symbol", "file" (innermost first), per call
# up to main: under it, libc has no frame pointers and, stripped, no symbols
frames='[x[:[n for n, _ in x].index("main") + 1] for x in [[(f.rsplit(" (", 1)[0].rsplit("+0x", 1)[0], f.rsplit(" (", 1)[1][:-1]) for f in e["args"]["native_stack"]] for e in ev if e.get("cat") == "cuda_api"]]'

if check "C++ with frame pointers: record --stack native" "$GPUBPF" record --no-device -q \
	--stack native -o "$TMPD/cc.json" -- "$TESTBIN/nativestack" "$LIB"; then
	is "every call is traced with a native stack" "$(json_query "$TMPD/cc.json" \
		'[(e["name"], "native_stack" in e["args"]) for e in ev if e.get("cat") == "cuda_api"]')" \
		"$(python3 -c 'import json; print(json.dumps([["cuInit", True]] + [["cuLaunchKernel", True], ["cuCtxSynchronize", True]] * 3 + [["cuCtxSynchronize", True]]))')"
	I='["cuInit", "libcuda.so.1"], ["main", "nativestack"]'
	L='["cuLaunchKernel", "libcuda.so.1"], ["gbtest::detail::launch_one(int)", "nativestack"], ["gbtest::Trainer<float>::step(int)", "nativestack"], ["gbtest::run(int)", "nativestack"], ["main", "nativestack"]'
	S='["cuCtxSynchronize", "libcuda.so.1"], ["gbtest::detail::sync_all()", "nativestack"], ["gbtest::Trainer<float>::step(int)", "nativestack"], ["gbtest::run(int)", "nativestack"], ["main", "nativestack"]'
	R='["cuCtxSynchronize", "libcuda.so.1"], ["gbtest::detail::sync_all()", "nativestack"], ["gbtest::recurse(int)", "nativestack"], ["gbtest::recurse(int)", "nativestack"], ["gbtest::recurse(int)", "nativestack"], ["gbtest::run(int)", "nativestack"], ["main", "nativestack"]'
	is "exact frames, demangled, innermost first (entry point, callers, recursion)" \
		"$(json_query "$TMPD/cc.json" "$frames" | tr -d ' ')" \
		"$(echo "[[${I//, \[/,[}],[${L//, \[/,[}],[${S//, \[/,[}],[${L//, \[/,[}],[${S//, \[/,[}],[${L//, \[/,[}],[${S//, \[/,[}],[${R//, \[/,[}]]" | tr -d ' ')"
	is "no Python stack on a C++ program" "$(json_query "$TMPD/cc.json" \
		'len([e for e in ev if "stack" in e.get("args", {})])')" 0
	is "no event lost" "$(json_query "$TMPD/cc.json" 'd["gpubpf"]["dropped_total"]')" 0
else
	skip "no trace" 4
fi

# a C program without frame pointers: nothing breaks, the entry point and
# its caller (the return address at the entry) are always there
# cudacalls stays a moment before exiting: this checks naming, not the
# documented race with a process's last instant
export CUDACALLS_LINGER_MS=300
if check "C without frame pointers: record --stack native" "$GPUBPF" record --no-device -q \
	--libcuda "$LIB" --stack native -o "$TMPD/c.json" -- "$TESTBIN/cudacalls" "$LIB" "$TMPD/c.truth.json" &&
	check "the same, --stack none" "$GPUBPF" record --no-device -q --libcuda "$LIB" --stack none \
	-o "$TMPD/c0.json" -- "$TESTBIN/cudacalls" "$LIB" "$TMPD/c0.truth.json"; then
	count='[e["name"] for e in ev if e.get("cat") == "cuda_api"]'
	is "the same calls traced as without stacks" "$(json_query "$TMPD/c.json" "$count")" \
		"$(json_query "$TMPD/c0.json" "$count")"
	is "every call: its entry point, then a frame of cudacalls" "$(json_query "$TMPD/c.json" \
		'[[e["name"]] + e["args"].get("native_stack", [])[:3] for e in ev if e.get("cat") == "cuda_api" and not (e["args"]["native_stack"][0].startswith(e["name"] + "+0x") and e["args"]["native_stack"][0].endswith(" (libcuda.so.1)") and e["args"]["native_stack"][1].endswith(" (cudacalls)"))]')" '[]'
else
	skip "no trace" 3
fi

# Python and native stacks together: both arrays, the Python one exact
py=$(ls "$HOME"/.pyenv/versions/3.12.*/bin/python3.12 2>/dev/null | head -1)
[[ -n "$py" ]] || py=$PY
if check "python,native: record" "$GPUBPF" record --no-device -q --stack python,native \
	-o "$TMPD/p.json" -- "$py" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" --deep 10; then
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/p.json" "$TMPD/truth.json" 64
	is "python,native: every call has both, the native one from its entry point" "$(json_query "$TMPD/p.json" \
		'[e["name"] for e in ev if e.get("cat") == "cuda_api" and e["name"] != "cuInit" and not ("stack" in e["args"] and e["args"]["native_stack"][0].startswith(e["name"] + "+0x"))]')" '[]'
else
	skip "no trace" 2
fi
# CPU samples carry native stacks too: nativestack computes 300 ms in
# spin_inner() <- spin() <- main, each with its frame pointer
if check "samples: record --stack native" "$GPUBPF" record --no-device -q --stack native \
	-o "$TMPD/sp.json" -- "$TESTBIN/nativestack" "$LIB" 300; then
	json_query "$TMPD/sp.json" '
[s := [e for e in ev if e.get("cat") == "sample"],
 top := [[f.rsplit("+0x", 1)[0] + " " + f[f.rfind("(") + 1:-1]
          for f in e["args"].get("native_stack", [])[:3]] for e in s],
 {"n": len(s), "spin": len([t for t in top if t == ["gbtest::spin_inner(long) nativestack",
                                                     "gbtest::spin(int) nativestack",
                                                     "main nativestack"]]),
  "named": len([e for e in s if e["name"] == (lambda f: f.split("+0x")[0] if "+0x" in f else f.split(" (")[0])(e["args"].get("native_stack", ["sample"])[0])])}][-1]' >"$TMPD/sp.count"
	cmp_ok "samples: taken while it spins" "$(json_query "$TMPD/sp.count" 'd["n"]')" -ge 50
	cmp_ok "samples: 90% exactly spin_inner(long) <- spin(int) <- main (percent)" \
		"$(json_query "$TMPD/sp.count" '100 * d["spin"] // d["n"]')" -ge 90
	is "samples: each named by its innermost native function" \
		"$(json_query "$TMPD/sp.count" 'd["named"] == d["n"]')" true
else
	skip "no trace" 3
fi
is "python,native: samples have both stacks" "$(json_query "$TMPD/p.json" \
	'len([e for e in ev if e.get("cat") == "sample" and {"stack", "native_stack"} <= set(e["args"])]) > 0')" true
check "--stack python: no native stacks" "$GPUBPF" record --no-device -q --stack python \
	-o "$TMPD/po.json" -- "$TESTBIN/nativestack" "$LIB" 100
is "--stack python: no event or sample has a native stack" "$(json_query "$TMPD/po.json" \
	'[len([e for e in ev if "native_stack" in e.get("args", {})]), len([e for e in ev if e.get("cat") == "sample"]) > 0]')" '[0, true]'
check_fails "--stack native,bogus is refused" "$GPUBPF" record --stack native,bogus -o "$TMPD/x.json" -- true
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/cc.json"
done_testing
