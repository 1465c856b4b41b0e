# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Helpers for gpubpf's shell tests.  Source at the top of each test:
#
#	. "$(dirname "$0")/lib.sh"
#	test_description "what this test checks"
#	require_root                    # or require_bpf, require_gpu, ...
#	plan 3                          # or done_testing at the end
#	check "runs" "$GPUBPF" --version
#	is "answer" "$(echo 42)" 42
#	pass "reached the end"
#
# Every test prints TAP on stdout; diagnostics go to stdout as "# ..."
# lines.  Helpers return 0 when the test passed and 1 when it failed, so
# "check ... || skip 'no trace' 2" works.  Each test gets a fresh $TMPD,
# removed at exit, and at_exit registers more cleanup.

GPUBPF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GPUBPF_ROOT
export LC_ALL=C

# GPUBPF_TEST_BIN runs the tests against another build (t0700: build/asan/gpubpf)
GPUBPF="${GPUBPF_TEST_BIN:-$GPUBPF_ROOT/build/gpubpf}"
SIMLIB="$GPUBPF_ROOT/build/sim"
# the injection library's variant with the simulated driver's backend
SIMINJ="$SIMLIB/libgpubpf_cupti.so"
STUBLIB="${CUDA_HOME:-/usr/local/cuda}/lib64/stubs"
TESTBIN="$GPUBPF_ROOT/build/tests"
PY=/usr/bin/python3
export GPUBPF SIMLIB SIMINJ STUBLIB TESTBIN PY

_t_count=0            # test results printed
_t_failed=0           # of which failed
_t_planned=           # N from plan, empty until planned
_t_exit_cmds=()

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gpubpf-test.XXXXXX")
export TMPD

# Run cmd (a string, eval'd) when the test exits, before $TMPD is removed;
# latest registered runs first.
at_exit() {
	_t_exit_cmds=("$1" "${_t_exit_cmds[@]}")
}

_t_on_exit() {
	local rc=$? c
	for c in "${_t_exit_cmds[@]}"; do
		eval "$c" || true
	done
	rm -rf "$TMPD"
	if [[ -n "$_t_planned" && $_t_count -ne $_t_planned ]]; then
		echo "# planned $_t_planned tests but ran $_t_count"
		((rc)) || rc=1
	elif [[ -z "$_t_planned" && $_t_count -gt 0 ]]; then
		echo "# no plan: call plan N or done_testing"
		((rc)) || rc=1
	elif ((rc == 1 && _t_failed > 0)); then
		# the plan is complete and the script ended on a failed helper:
		# the failure is already reported as "not ok"
		rc=0
	fi
	exit "$rc"
}
trap _t_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

test_description() {
	echo "# $*"
}

plan() {
	_t_planned=$1
	echo "1..$1"
}

done_testing() {
	if [[ -z "$_t_planned" ]]; then
		_t_planned=$_t_count
		echo "1..$_t_count"
	fi
}

# Print every line of stdin as a TAP diagnostic.
diag() {
	if (($#)); then
		printf '%s\n' "$*" | sed 's/^/# /'
	else
		sed 's/^/# /'
	fi
}

pass() {
	_t_count=$((_t_count + 1))
	echo "ok $_t_count - $1"
	return 0
}

fail() {
	_t_count=$((_t_count + 1))
	_t_failed=$((_t_failed + 1))
	echo "not ok $_t_count - $1"
	return 1
}

# ok DESC COND...: pass when the test command COND... succeeds.
ok() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

# check DESC CMD ARGS...: run CMD; pass when it exits 0.  On failure its
# exit status and the tail of its output are shown as diagnostics.
check() {
	local desc=$1 rc=0 out
	shift
	out="$TMPD/.check.out"
	"$@" >"$out" 2>&1 || rc=$?
	if ((rc == 0)); then
		pass "$desc"
	else
		fail "$desc"
		diag "command: $*"
		diag "exit status $rc; last output:"
		tail -n 15 "$out" | diag
		return 1
	fi
}

# check_fails DESC CMD ARGS...: pass when CMD exits non-zero.
check_fails() {
	local desc=$1
	shift
	if "$@" >"$TMPD/.check.out" 2>&1; then
		fail "$desc"
		diag "command unexpectedly succeeded: $*"
		return 1
	fi
	pass "$desc"
}

# is DESC GOT EXPECTED: pass when the strings are equal.
is() {
	if [[ "$2" == "$3" ]]; then
		pass "$1"
	else
		fail "$1"
		diag "     got: '$2'"
		diag "expected: '$3'"
		return 1
	fi
}

# isnt DESC GOT UNEXPECTED
isnt() {
	if [[ "$2" != "$3" ]]; then
		pass "$1"
	else
		fail "$1"
		diag "got unexpected '$2'"
		return 1
	fi
}

# like DESC GOT REGEX: pass when GOT matches the extended regex.
like() {
	if [[ "$2" =~ $3 ]]; then
		pass "$1"
	else
		fail "$1"
		diag "     got: '$2'"
		diag "expected to match: $3"
		return 1
	fi
}

# cmp_ok DESC A OP B: numeric comparison, OP one of -eq -ne -lt -le -gt -ge
# (or == != < <= > >=).
cmp_ok() {
	local a=$2 op=$3 b=$4 r=1
	if [[ "$a" =~ ^-?[0-9]+$ && "$b" =~ ^-?[0-9]+$ ]]; then
		case "$op" in
		-eq | '==') ((a == b)) && r=0 ;;
		-ne | '!=') ((a != b)) && r=0 ;;
		-lt | '<') ((a < b)) && r=0 ;;
		-le | '<=') ((a <= b)) && r=0 ;;
		-gt | '>') ((a > b)) && r=0 ;;
		-ge | '>=') ((a >= b)) && r=0 ;;
		esac
	fi
	if ((r == 0)); then
		pass "$1"
	else
		fail "$1"
		diag "'$a' $op '$b' is false"
		return 1
	fi
}

# skip REASON [N]: report N (default 1) tests as skipped.
skip() {
	local i n=${2:-1}
	for ((i = 0; i < n; i++)); do
		_t_count=$((_t_count + 1))
		echo "ok $_t_count # SKIP $1"
	done
	return 0
}

# skip_all REASON: skip the whole test.  Before plan this is a "1..0"
# plan; after it, the remaining planned tests are reported as skipped.
skip_all() {
	if [[ -z "$_t_planned" ]]; then
		_t_planned=0
		_t_count=0
		echo "1..0 # SKIP $1"
	elif ((_t_count < _t_planned)); then
		skip "$1" $((_t_planned - _t_count))
	fi
	exit 0
}

# bail_out REASON: abort the test as failed.
bail_out() {
	echo "Bail out! $*"
	exit 2
}

# --- prerequisites: each skips the whole test when unmet -------------------

require_root() {
	[[ $(id -u) -eq 0 ]] || skip_all "needs root"
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip_all "needs command $c"
	done
}

require_file() {
	local f
	for f in "$@"; do
		[[ -e "$f" ]] || skip_all "needs $f"
	done
}

# Root, BTF, the bpf() syscall usable, and perf uprobes in the kernel.
require_bpf() {
	require_root
	[[ -r /sys/kernel/btf/vmlinux ]] ||
		skip_all "needs BPF: no /sys/kernel/btf/vmlinux"
	[[ -e /sys/bus/event_source/devices/uprobe ]] ||
		skip_all "needs BPF: kernel has no uprobe perf events"
	if command -v bpftool >/dev/null 2>&1; then
		bpftool prog list >/dev/null 2>&1 ||
			skip_all "needs BPF: bpf() syscall not permitted here"
	fi
}

require_gpu() {
	local why="nvidia-smi absent"
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi -L >/dev/null 2>&1 && return 0
		why="nvidia-smi -L failed"
	fi
	[[ -e /dev/nvidia0 ]] || skip_all "no NVIDIA GPU ($why, no /dev/nvidia0)"
}

# gpu_setup DIR: what every GPU machine check (tests/gpu/) starts with:
# a GPU, root, gpubpf and its injection library, PyTorch; then in the
# repository's root, with $out (OUT, else DIR) made, the tools and
# libraries `make gpu-carry` put in .carry found first, and no injection
# library inherited from the caller.
gpu_setup() {
	require_gpu
	require_root
	require_gpubpf
	require_file "$GPUBPF_ROOT/build/libgpubpf_cupti.so"
	python3 -c 'import torch' 2>/dev/null || skip_all "needs PyTorch (python3 -c 'import torch')"
	cd "$GPUBPF_ROOT" || exit 1
	out=${OUT:-$1}
	mkdir -p "$out"
	export PATH="$PWD/.carry/bin:$PATH"
	export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	unset CUDA_INJECTION64_PATH
}

# The built binaries a test needs.
require_gpubpf() {
	[[ -x "$GPUBPF" ]] || skip_all "needs $GPUBPF (run make)"
}

# The simulated driver, and the injection library's variant for it, which
# record loads into a process on that driver, as it would the shipped one
# into a process on a GPU's.
require_sim() {
	[[ -e "$SIMLIB/libcuda.so.1" ]] || skip_all "needs $SIMLIB/libcuda.so.1 (run make)"
	[[ -e "$SIMINJ" ]] || skip_all "needs $SIMINJ (run make)"
}

# --- utilities --------------------------------------------------------------

# job_summary FILE: the last line a workload printed (sim/train.py's summary),
# without what differs between runs (pid, times).
job_summary() {
	tail -n 1 "$1" | sed -E 's/pid [0-9]+ //; s/ gpu [0-9.]+ ms//; s/ wall [0-9.]+ ms//'
}

# job_steps FILE: the number of steps sim/train.py's summary in FILE says it
# ran (a job run with --until-file: its reference run is given as many).
job_steps() {
	tail -n 1 "$1" | sed -nE 's/.* steps ([0-9]+) .*/\1/p'
}

# cpythons VERSION...: a CPython of each of those versions, one path a line,
# in that order: pyenv's (3.12 finds ~/.pyenv/versions/3.12.*/bin/python3.12),
# else Debian unstable's in the chroot scripts/sid-python.sh makes
# (tests/sid-python3.X: 3.14 and 3.15); none for a version not found.
cpythons() {
	local v p found
	for v in "$@"; do
		found=
		for p in "$HOME"/.pyenv/versions/$v.*/bin/python$v; do
			[[ -x "$p" ]] && echo "$p" && found=1
		done
		[[ -z "$found" && -e "$GPUBPF_ROOT/tests/sid-python$v" &&
			-x "${GPUBPF_SID:-/var/lib/gpubpf/sid}/usr/bin/python$v" ]] &&
			echo "$GPUBPF_ROOT/tests/sid-python$v"
	done
	return 0
}

# expect_error DESC STATUS REGEX CMD...: CMD exits STATUS with one line on
# stderr matching REGEX and writes nothing to $out (a directory the test
# makes); four results.  Its stderr stays in $TMPD/stderr.
expect_error() {
	local desc=$1 status=$2 re=$3 rc=0
	shift 3
	"$@" >"$TMPD/stdout" 2>"$TMPD/stderr" </dev/null || rc=$?
	is "$desc: exit status" "$rc" "$status"
	like "$desc: says why" "$(cat "$TMPD/stderr")" "$re"
	is "$desc: one line" "$(wc -l <"$TMPD/stderr")" 1
	is "$desc: no output file" "$(ls -A "$out")" ""
}

# launcher_named FILE: 1 when a thread that launched kernels has a name in
# the trace FILE, else 0.  A worker gone before its calls are decoded is
# named only by the record of its exit: 1 tells that record was kept.
launcher_named() {
	json_query "$1" 'int(any(e.get("name") == "thread_name" and
 e["tid"] in set(x["tid"] for x in ev if x.get("name") == "cuLaunchKernel") for e in ev))'
}

# json_query FILE EXPR: evaluate the python expression EXPR with d bound to
# the parsed JSON of FILE (ev = d["traceEvents"] when present).  Strings print
# as they are, everything else as JSON (so True prints "true", 3 prints "3").
json_query() {
	"$PY" - "$1" "$2" <<'PYEOF'
import collections, json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
ev = d.get("traceEvents", []) if isinstance(d, dict) else d
r = eval(sys.argv[2])
if isinstance(r, str):
    print(r)
else:
    print(json.dumps(r))
PYEOF
}

# wait_for_file PATH [TIMEOUT]: wait up to TIMEOUT seconds (default 10) for
# PATH to exist; 0 when it does, 1 on timeout.
wait_for_file() {
	local path=$1 tenths=$(( ${2:-10} * 10 ))
	while ((tenths-- > 0)); do
		[[ -e "$path" ]] && return 0
		sleep 0.1
	done
	[[ -e "$path" ]]
}

# wait_for_cmd TIMEOUT CMD...: retry CMD every 0.1 s until it succeeds.
wait_for_cmd() {
	local tenths=$(( $1 * 10 ))
	shift
	while ((tenths-- > 0)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	"$@" >/dev/null 2>&1
}

# wait_recording ERRFILE: wait (up to 20 s) until a background record -p or
# -a, its stderr in ERRFILE, says it records; not fooled by an earlier line
# that only mentions recording ("GPU timing off: ...; recording host calls
# only", printed before the probes of its other targets are attached).
wait_recording() {
	wait_for_cmd 20 grep -q '^gpubpf: recording.*; Ctrl-C to stop$' "$1"
}

# tap_from CMD ARGS...: run a checker that prints unnumbered TAP lines
# ("ok - desc", "not ok - desc", "# diagnostics") and count each one as a
# test of this script.  Fails when a line failed, when the checker printed
# no result or when it exited non-zero.
tap_from() {
	local line rc=0 any=0 bad=0 out="$TMPD/.tap_from.out"
	"$@" >"$out" 2>&1 || rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) any=1; pass "${line#ok - }" ;;
		"not ok - "*) any=1; bad=1; fail "${line#not ok - }" ;;
		*) echo "# $line" ;;
		esac
	done <"$out"
	if ((!any || (rc && !bad))); then
		fail "checker $(basename "$1") ran (exit status $rc)"
		return 1
	fi
	return $bad
}

# The probed entry points, as `gpubpf list` prints them, in $TMPD/probed.txt.
probed_list() {
	"$GPUBPF" list >"$TMPD/probed.txt"
	echo "$TMPD/probed.txt"
}

# readme_commands [README]: the commands of the README's first code block
# (indented by four spaces, or fenced with ```), one a line, as written.
# tests/fresh-debian.sh runs them; tests/t0010-readme-commands.sh checks them.
readme_commands() {
	awk '
	state == 0 && /^```/ { state = 2; next }
	state == 0 && /^    [^ ]/ { state = 1 }
	state == 1 { if (/^    /) { print substr($0, 5); next } exit }
	state == 2 { if (/^```/) exit; print }
	' "${1:-$GPUBPF_ROOT/README.md}"
}

# Perfetto's own importer (trace_processor_shell, v58.2): $TRACE_PROCESSOR,
# else the project's shared tools, else one on PATH; empty when none runs.
trace_processor() {
	local c
	for c in "${TRACE_PROCESSOR:-}" "$GPUBPF_ROOT/../shared/tools/perfetto/trace_processor_shell" \
		/work/shared/tools/perfetto/trace_processor_shell "$(command -v trace_processor_shell)"; do
		[[ -n "$c" && -x "$c" ]] && "$c" --version >/dev/null 2>&1 && { echo "$c"; return 0; }
	done
	return 1
}

# tp_tap N SCRIPT ARGS...: the N results of a check SCRIPT that queries
# traces with Perfetto's trace_processor_shell; N skips where it is absent.
tp_tap() {
	local n=$1 tp
	shift
	if ! tp=$(trace_processor); then
		skip "Perfetto's trace_processor_shell not found (set TRACE_PROCESSOR)" "$n"
		return 0
	fi
	TRACE_PROCESSOR=$tp tap_from "$PY" "$@"
}

# late_calls_line TRACE PID...: the line record's summary must give for the
# calls of PIDs in TRACE without a Python stack (made before gpubpf found
# their interpreters), "" where there are none: a scan of processes may find
# a fork before its first call, which then has its stack.
late_calls_line() {
	local trace=$1 pids
	shift
	pids=$(IFS=,; echo "$*")
	json_query "$trace" "(lambda n: '' if not sum(n) else
  'gpubpf: %d call%s of %d Python process%s came before gpubpf found %s: no Python stack' % (
  sum(n), 's' * (sum(n) > 1), len([x for x in n if x]), 'es' * (len([x for x in n if x]) > 1),
  'their interpreters' if len([x for x in n if x]) > 1 else 'its interpreter'))(
  [len([e for e in ev if e.get('pid') == p and e.get('cat') == 'cuda_api' and 'stack' not in e['args']])
   for p in [$pids]])"
}

# fork_workers_ok NAME TRACE STDERR WORKERS CALLS: two results: the calls of
# tests/py/fork_workers.py's WORKERS workers (gone before a tracer could
# look at them) are all in TRACE, each with its Python stack from the first
# (a fork is walked with its parent's layout), and STDERR counts no call
# without one.
fork_workers_ok() {
	local name=$1 trace=$2 err=$3 workers=$4 calls=$5 src="$GPUBPF_ROOT/tests/py/fork_workers.py"
	local init sync
	init=$(grep -n "# THE WORKER'S INIT" "$src" | cut -d: -f1)
	sync=$(grep -n "# THE WORKER'S CALL" "$src" | cut -d: -f1)
	is "$name: each worker's calls, each with its stack" "$(json_query "$trace" "
(lambda c: [len({e['pid'] for e in c}), len(c),
            len([e for e in c if e['args'].get('stack', [''])[0] == 'work ($src:' + str(
                 $init if e['name'] == 'cuInit' else $sync) + ')'])])(
 [e for e in ev if e.get('name') in ('cuInit', 'cuCtxSynchronize')])")" \
		"[$workers, $((workers * (calls + 1))), $((workers * (calls + 1)))]"
	is "$name: no call said to lack its stack" "$(grep -c 'came before\|no Python stack' "$err")" 0
}

# perfetto_ok TRACE [--no-flows]: three results (tests/check_perfetto.py):
# Perfetto imports TRACE without errors, each GPU slice has exactly one
# flow from its call, each call lies in its innermost Python function's
# slice.
perfetto_ok() {
	tp_tap 3 "$GPUBPF_ROOT/tests/check_perfetto.py" "$@"
}

# gil_flows_ok TRACE.json TRACE.pftrace: two results (tests/check_gil_flows.py):
# as Perfetto imports them, each GIL wait with a holder has one flow to the
# holder's state at its start, in both formats of one recording.
gil_flows_ok() {
	tp_tap 2 "$GPUBPF_ROOT/tests/check_gil_flows.py" "$@"
}
