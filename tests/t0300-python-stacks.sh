#!/usr/bin/env bash
# Python stacks on every call, walked by eBPF: on every CPython the machine
# has, each captured stack equals the workload's own (names and lines)
# through methods, generators, lambdas, a C callback, recursion, asyncio
# coroutines (before and after a suspension), two
# threads, a stack deeper than the limit (truncated, flagged) and one of
# exactly the limit (whole, not flagged: 3.12+ flagged it); walked
# with may_goto and with bpf_loop; after an exec of another Python; in a
# process that made a subinterpreter, recorded and attached with -p; in
# one that runs 300 threads, attached with -p; in a fork given an ended
# process's pid; without ASLR, in a program's twin run by exec or at its
# pid; in notebook cells, each cell's code made where the last one's was.
. "$(dirname "$0")/lib.sh"
test_description "Python stacks on CUDA calls, CPython 3.6 to 3.15"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
mapfile -t pythons < <(cpythons 3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15)
[[ -x /usr/bin/python3.11 ]] && pythons+=(/usr/bin/python3.11)
((${#pythons[@]})) || skip_all "no CPython 3.6+ found"
for py in "${pythons[@]}"; do
	name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ($py)"
	for depth in 64 256; do
		if check "$name, depth $depth: record" "$GPUBPF" record --stack-depth "$depth" \
			-o "$TMPD/s.json" -- "$py" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" \
			--deep 300 --exact "$depth"; then
			tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/s.json" "$TMPD/truth.json" "$depth"
			perfetto_ok "$TMPD/s.json"
		fi
	done
done
# the walk as on a kernel without may_goto (before Linux 6.9): four frames a
# bpf_loop turn, on each frame layout (frame objects: 3.6's f_lasti at its own offset, 3.10's; 3.11's, 3.12+'s)
for py in $(cpythons 3.6 3.10 3.11 3.13); do
	name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])'), bpf_loop walk"
	if check "$name: record" env GPUBPF_TEST_NO_MAY_GOTO=1 "$GPUBPF" record -v --stack-depth 64 \
		-o "$TMPD/l.json" -- "$py" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" --deep 300; then
		like "$name: -v says so" "$(grep 'Python stacks:' "$TMPD/.check.out")" \
			"^gpubpf: Python stacks: four frames a bpf_loop turn"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/l.json" "$TMPD/truth.json" 64
	fi
done
# and the loop the runs above used: may_goto from Linux 6.9 on
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if ((kmaj > 6 || (kmaj == 6 && ${kmin%%[!0-9]*} >= 9))); then
	loop="a frame an iteration of a may_goto loop"
else
	loop="four frames a bpf_loop turn"
fi
if check "-v: the walk's loop named" "$GPUBPF" record -v --no-device -o "$TMPD/v.json" -- true; then
	like "-v: on Linux $kmaj.${kmin%%[!0-9]*}, $loop" "$(grep 'Python stacks:' "$TMPD/.check.out")" \
		"^gpubpf: Python stacks: $loop"
fi
# a process whose Python runs another Python in its place (exec, the same
# pid): the new program's stacks are walked with the new layout
mapfile -t pair < <(cpythons 3.11 3.13 3.12 3.10)
if ((${#pair[@]} >= 2)); then
	name="$("${pair[0]}" -c 'import sys; print("%d.%d" % sys.version_info[:2])') execs $("${pair[1]}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
	if check "$name: record" "$GPUBPF" record -v --stack-depth 64 -o "$TMPD/x.json" -- \
		"${pair[0]}" "$GPUBPF_ROOT/tests/py/exec_into.py" "${pair[1]}" \
		"$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" --deep 300; then
		like "$name: -v says the new program's Python is looked for" \
			"$(grep -c 'runs a new program: looking for its Python' "$TMPD/.check.out")" "^[1-9]"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/x.json" "$TMPD/truth.json" 64
	fi
	# the same exec in a process attached with -p: held at the new
	# program's libcuda too, its stacks from its first call
	rm -f "$TMPD/xgo"
	"${pair[0]}" "$GPUBPF_ROOT/tests/py/exec_into.py" --wait-file "$TMPD/xgo" "${pair[1]}" \
		"$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/ptruth.json" --deep 300 &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
	"$GPUBPF" record -v --stack-depth 64 -p "$w" -o "$TMPD/px.json" 2>"$TMPD/px.err" &
	g=$!
	wait_recording "$TMPD/px.err"
	touch "$TMPD/xgo"
	wait "$w" "$g"
	like "-p, $name: held at the new program's libcuda" \
		"$(grep -c "pid $w loaded .*held until probed" "$TMPD/px.err")" "^[1-9]" ||
		diag <"$TMPD/px.err"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/px.json" "$TMPD/ptruth.json" 64
else
	skip "fewer than two CPythons to exec one into the other" 2
fi
# a process that ended, then a fork given its pid (not an exec: nothing
# says the pid runs a new program) that runs another CPython: its Python
# is looked for anew, and its stacks walked with its own layout (before,
# the ended process's was kept, and none of the fork's calls had a stack)
mapfile -t pair < <(cpythons 3.12 3.11 3.13 3.10)
if ((${#pair[@]} >= 2)); then
	name="$("${pair[1]}" -c 'import sys; print("%d.%d" % sys.version_info[:2])') at an ended $("${pair[0]}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')'s pid"
	first='import ctypes, os; l = ctypes.CDLL("libcuda.so.1"); l.cuInit(0); l.cuCtxSynchronize(); print(os.getpid())'
	line=$(grep -n "# THE CHILD'S CALL" "$GPUBPF_ROOT/tests/py/fork_at_pid.py" | cut -d: -f1)
	for try in 1 2 3; do
		rc=0
		"$GPUBPF" record -q -o "$TMPD/f.json" -- bash -c 'p=$("$1" -c "$2") && exec "$3" "$4" "$p" 20' \
			sh "${pair[0]}" "$first" "${pair[1]}" "$GPUBPF_ROOT/tests/py/fork_at_pid.py" \
			2>"$TMPD/f.err" || rc=$?
		((rc == 3)) || break    # another process took the pid first
	done
	is "$name: recorded" "$rc" 0
	is "$name: each of the fork's 20 syncs has its own line" "$(json_query "$TMPD/f.json" \
		'sorted({str(e["args"].get("stack", [None])[0]) for e in ev if e.get("name") == "cuCtxSynchronize"}) + [len([e for e in ev if e.get("name") == "cuCtxSynchronize"])]')" \
		"[\"<module> (<string>:1)\", \"child ($GPUBPF_ROOT/tests/py/fork_at_pid.py:$line)\", 21]" ||
		{ json_query "$TMPD/f.json" '"\n".join("%s pid %s %d us: %s" % (e["name"], e["pid"], e["ts"], e["args"].get("stack", ["no stack"])[0]) for e in sorted(ev, key=lambda e: e.get("ts", 0)) if e.get("cat") == "cuda_api")' | diag; diag <"$TMPD/f.err"; }
	# its cuInit, unless a scan found it first
	is "$name: the summary counts the fork's calls made before its Python was found" \
		"$(grep 'came before' "$TMPD/f.err")" "$(late_calls_line "$TMPD/f.json" "$(json_query \
		"$TMPD/f.json" "[e['pid'] for e in ev if 'child (' in str(e['args'].get('stack'))][0]")")"
else
	skip "fewer than two CPythons for a fork at an ended process's pid" 2
fi
# without ASLR (setarch -R) a program and its twin (the same code under
# another name) have their frames and code objects at the same addresses:
# the twin run in the program's place (exec), or as a later process at its
# pid, has calls with its own stack.  By exec, the thread's walks had kept
# the first program's code tokens (a thread's task storage outlives its
# exec): the twin's calls had the first's names on 3.10, and "?" for
# frames on 3.11 and 3.12
# twin_check NAME JSON OUT: the calls of both programs in JSON each have
# their own stack, where the two code addresses the programs printed (in
# OUT) are one; else skipped
twin_check() {
	local main want
	main="main ($GPUBPF_ROOT/tests/py/twin.py:$(grep -n '^    scope\[name\](lib, n)' "$GPUBPF_ROOT/tests/py/twin.py" | cut -d: -f1))"
	want="[[\"alpha (alpha.py:4) < $main\", 5], [\"bravo (bravo.py:4) < $main\", 5]]"
	if (($(grep -c '^0x' "$3") != 2 || $(grep '^0x' "$3" | cut -d' ' -f1 | sort -u | wc -l) != 1)); then
		skip "$1: the two programs' code is not at one address here"
		return
	fi
	is "$1: each program's 5 syncs have its own stack" "$(json_query "$2" \
		'[[k, n] for k, n in sorted(collections.Counter(" < ".join(e["args"].get("stack", ["no stack"])[:2]) for e in ev if e.get("name") == "cuCtxSynchronize").items())]')" \
		"$want"
}
if ! setarch -R true 2>/dev/null; then
	skip "setarch -R refused here: no run without ASLR" $((2 * ${#pythons[@]} + 2))
else
	for py in "${pythons[@]}"; do
		name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ($py), no ASLR, a twin by exec"
		again=$py
		[[ $py == */sid-python* ]] && again=/usr/bin/${py##*/sid-}      # the chroot's own, from inside
		check "$name: record" "$GPUBPF" record -q -o "$TMPD/tw.json" -- setarch -R \
			"$py" "$GPUBPF_ROOT/tests/py/twin.py" alpha 5 "$again" "$GPUBPF_ROOT/tests/py/twin.py" bravo 5 &&
			twin_check "$name" "$TMPD/tw.json" "$TMPD/.check.out"
	done
	# the twin as a later process given the program's pid
	py=$(cpythons 3.12 3.11 3.13 3.10 | head -n 1)
	if [[ -z "$py" ]]; then
		skip "no CPython 3.10-3.13 for a twin at an ended program's pid" 2
	else
		name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])'), no ASLR, a twin at an ended program's pid"
		for try in 1 2 3; do
			rc=0
			"$GPUBPF" record -q -o "$TMPD/tp.json" -- setarch -R bash -c \
				'a=$("$1" "$2" alpha 5) && echo "$a" && exec "$1" "$3" "${a#* }" -- "$1" "$2" bravo 5' \
				sh "$py" "$GPUBPF_ROOT/tests/py/twin.py" "$GPUBPF_ROOT/tests/py/fork_at_pid.py" \
				>"$TMPD/tp.out" 2>"$TMPD/tp.err" || rc=$?
			((rc == 3)) || break    # another process took the pid first
		done
		is "$name: recorded" "$rc" 0 || diag <"$TMPD/tp.err"
		twin_check "$name" "$TMPD/tp.json" "$TMPD/tp.out"
	fi
fi
# notebook cells: code compiled and run one after another, each cell's
# code freed before the next is made, mostly where the last one's was and
# with its frame where the last one's was: each cell's sync has its own
# file and line.  The walks had kept the first cell's code token for its
# frame (every cell but the first named as an earlier one); a code object
# freed now makes them read their tokens anew.  Before 3.12, where a code
# object has no serial of its own, a token folded from its pointers alone
# was the freed one's, its file name and line table lying where the freed
# one's did (cells named as the one two before): it folds its file name.
# Cells compiled from one file name (exec's "<string>"), each its line
# further down, were named with an earlier cell's line: it folds its line
# table's bytes too.
cell_line=$(grep -n '^    exec(code' "$GPUBPF_ROOT/tests/py/cells.py" | cut -d: -f1)
for py in "${pythons[@]}"; do
	minor=$("$py" -c 'import sys; print(sys.version_info[1])')
	for shape in varied same onefile; do
		name="3.$minor ($py), notebook cells ($shape source)"
		check "$name: record" "$GPUBPF" record -v -o "$TMPD/cells.json" -- \
			"$py" "$GPUBPF_ROOT/tests/py/cells.py" 6 "$shape" || continue
		# else its walks read every token at every call: right, and slower
		like "$name: the code objects it frees are counted" \
			"$(grep -m 1 -e 'code objects .* frees' -e 'read every frame' "$TMPD/.check.out")" \
			'^gpubpf: pid [0-9]+: counting the code objects /.+ frees in all processes$'
		if (($(grep '^0x' "$TMPD/.check.out" | sort -u | wc -l) == 6)); then
			skip "$name: no cell's code object was made at an earlier one's address here"
			continue
		fi
		is "$name: each cell's sync has its own file and line" "$(json_query "$TMPD/cells.json" \
			'[" < ".join(e["args"].get("stack", ["no stack"])[:2]) for e in sorted(ev, key=lambda e: e.get("ts", 0)) if e.get("name") == "cuCtxSynchronize"]')" \
			"$("$PY" -c 'import json, sys
print(json.dumps(["<module> (%s:%d) < run_cell (%s:%s)" % ("cell.py" if sys.argv[1] == "onefile" else "cell%d.py" % k, 2 + k * (sys.argv[1] != "same"), sys.argv[2], sys.argv[3]) for k in range(6)]))' \
				"$shape" "$GPUBPF_ROOT/tests/py/cells.py" "$cell_line")"
	done
done
# a module edited and reloaded between calls, as autoreload does: its
# function's new code object has the old one's file name, name and counts,
# and often its address; its lines differ, and each call has its version's
# line (before 3.12 the token has no serial to tell the versions apart:
# their line tables' and other objects' addresses do)
for py in "${pythons[@]}"; do
	minor=$("$py" -c 'import sys; print(sys.version_info[1])')
	name="3.$minor ($py), a module reloaded after each edit"
	mkdir -p "$TMPD/reload" && rm -f "$TMPD/reload/edited.py"
	check "$name: record" "$GPUBPF" record -o "$TMPD/reload.json" -- \
		"$py" "$GPUBPF_ROOT/tests/py/reload.py" "$TMPD/reload" 6 || continue
	if (($(grep '^[23] 0x' "$TMPD/.check.out" | cut -d' ' -f2 | sort -u | wc -l) == 6)); then
		skip "$name: no version's code object was made at an earlier one's address here"
		continue
	fi
	is "$name: each turn's sync has its version's line" "$(json_query "$TMPD/reload.json" \
		'[e["args"].get("stack", ["no stack"])[0] for e in sorted(ev, key=lambda e: e.get("ts", 0)) if e.get("name") == "cuCtxSynchronize"]')" \
		"$(grep '^[23] 0x' "$TMPD/.check.out" | "$PY" -c 'import json, sys
print(json.dumps(["step (%s/edited.py:%s)" % (sys.argv[1], l.split()[0]) for l in sys.stdin]))' "$TMPD/reload")"
done
# a process that made a subinterpreter first: CPython lists interpreters
# newest first, and the main one's threads are found all the same
for py in $(cpythons 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15); do
	name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') with a subinterpreter"
	if check "$name: record" "$GPUBPF" record --stack-depth 64 -o "$TMPD/i.json" -- \
		"$py" "$GPUBPF_ROOT/tests/py/subinterp_first.py" \
		"$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" --deep 300; then
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/i.json" "$TMPD/truth.json" 64
	fi
done
# attached_stacks TAG WRAPPER...: stackwork.py, run by WRAPPER... through
# wait_then.py, recorded with -p from its first call; its stacks checked
attached_stacks() {
	local tag=$1 w g rc=0
	shift
	rm -f "$TMPD/${tag}go" "$TMPD/p$tag.json"
	"$@" "$GPUBPF_ROOT/tests/py/wait_then.py" "$TMPD/${tag}go" \
		"$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/${tag}truth.json" --deep 300 &
	w=$!
	at_exit "kill $w 2>/dev/null"
	wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
	"$GPUBPF" record --stack-depth 64 -p "$w" -o "$TMPD/p$tag.json" 2>"$TMPD/p$tag.err" &
	g=$!
	wait_recording "$TMPD/p$tag.err"
	touch "$TMPD/${tag}go"
	wait "$w"
	wait "$g" || rc=$?
	is "-p, $("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])') $(basename "$2"): recorded" "$rc" 0 ||
		diag <"$TMPD/p$tag.err"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/p$tag.json" "$TMPD/${tag}truth.json" 64
}
# the same attached with -p once it has: no thread was walked before, and
# on 3.12 the main thread's idle state in the subinterpreter is met first
for py in $(cpythons 3.12 3.15); do
	attached_stacks i "$py" "$GPUBPF_ROOT/tests/py/subinterp_first.py"
done
# attached with -p to a process that runs 300 Python threads: its main
# thread's state, last of the list, is found at its first call (a walk in
# the scheduler searches 128 states, one at a call 4096; before, 128 for
# both, and the main thread's calls had no stacks)
for py in $(cpythons 3.6 3.9 3.11 3.12 3.13); do
	attached_stacks t "$py" "$GPUBPF_ROOT/tests/py/threads_first.py" 300
done
# a process started long before gpubpf, attached with -p: its stacks too
"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 6 --wait-file "$TMPD/go" 2>/dev/null &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
"$GPUBPF" record --quiet -p "$w" -o "$TMPD/p.json" 2>"$TMPD/p.err" &
g=$!
wait_recording "$TMPD/p.err"
touch "$TMPD/go"
wait "$w" "$g"
is "-p: every launch of the training loop carries its stack" "$(json_query "$TMPD/p.json" \
	'len([e for e in ev if e.get("name", "").startswith("cuLaunchKernel") and "stack" not in e["args"]])')" 0
is "-p: launches from the layers come through Driver.launch, with lines" "$(json_query "$TMPD/p.json" '
sorted({" < ".join(f.split(" (")[0] for f in e["args"]["stack"][:3]) for e in ev
        if e.get("name", "").startswith("cuLaunchKernel") and "Linear.forward" in str(e["args"]["stack"][2:3])})')" \
	'["Driver.call < Driver.launch < Linear.forward"]'
check "--stack none: no stacks" "$GPUBPF" record --stack none -o "$TMPD/n.json" -- \
	"$PY" "$GPUBPF_ROOT/tests/py/stackwork.py" "$TMPD/truth.json" --deep 10
is "--stack none: no event has a stack" "$(json_query "$TMPD/n.json" \
	'len([e for e in ev if "stack" in e.get("args", {})])')" 0
# not_walked NAME REASON PY: an interpreter gpubpf cannot walk: said once
# (REASON, a regex), its calls still traced, none with a stack
not_walked() {
	local rc=0
	"$GPUBPF" record -o "$TMPD/nw.json" -- "$3" -c '
import ctypes
lib = ctypes.CDLL("libcuda.so.1")
lib.cuInit(0)
for i in range(7):
    lib.cuCtxSynchronize()
' 2>"$TMPD/nw.err" || rc=$?
	is "$1: recorded anyway, exit 0" "$rc" 0
	like "$1: one clear line" "$(grep 'no Python stacks' "$TMPD/nw.err")" \
		"^gpubpf: pid [0-9]+: no Python stacks: $2\$"
	is "$1: every call traced, without stacks" "$(json_query "$TMPD/nw.json" \
		'(len([e for e in ev if e.get("cat") == "cuda_api" and e["name"] == "cuCtxSynchronize"]), len([e for e in ev if "stack" in e.get("args", {})]))')" \
		"[7, 0]"
}
old=$(ls -d "$HOME"/.pyenv/versions/2.7.*/bin/python2.7 2>/dev/null | head -1)
if [[ -n "$old" ]]; then
	not_walked "CPython 2.7" "CPython 2.7 is not supported \\(3.6 to 3.15\\)" "$old"
else
	skip "no CPython 2.7 to stand for an unsupported version" 3
fi
# PyPy keeps no CPython frames (it said nothing)
if command -v pypy3 >/dev/null; then
	not_walked "PyPy" "it runs PyPy \\(libpypy[^)]*\\): only CPython's stacks are walked" pypy3
else
	skip "no pypy3 (bash scripts/install-deps.sh installs it)" 3
fi
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/p.json"
done_testing
