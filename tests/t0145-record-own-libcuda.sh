#!/usr/bin/env bash
# record -- CMD traces the libcuda the command itself loads, even one that
# gpubpf's own environment cannot find (LD_LIBRARY_PATH set by the command,
# a library dlopen()ed by full path): the process is held when it maps the
# library until the probes are in, so no call is lost, cuInit included.
# Where calls could have been missed, the summary line and the trace say so.
# Where tracefs is not mounted, gpubpf mounts it to hold processes.
# A process chrooted inside a mount namespace of its own is probed too, and
# under -p one whose libcuda was replaced on disk since it loaded it.
. "$(dirname "$0")/lib.sh"
test_description "record -- CMD probes the libcuda the command loads, from its first call"
require_bpf
require_sim
probed=$(probed_list)
unset LD_LIBRARY_PATH

# gpubpf's own environment must not find the simulated driver
if LD_LIBRARY_PATH= "$PY" -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
	skip_all "a libcuda.so.1 is installed where every process finds it"
fi

# 1. a wrapper that sets LD_LIBRARY_PATH itself, GPU timing on
check "record of a wrapper setting LD_LIBRARY_PATH exits 0" \
	"$GPUBPF" record -q -o "$TMPD/wrap.json" -- sh -c "LD_LIBRARY_PATH='$SIMLIB' exec \
'$PY' '$GPUBPF_ROOT/sim/train.py' --steps 3 --truth '$TMPD/wrap-truth.json'"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/wrap.json" "$TMPD/wrap-truth.json" \
	"$probed"
is "the first cuInit is in the trace" "$(json_query "$TMPD/wrap.json" \
	'len([e for e in ev if e.get("name") == "cuInit"])')" 1
is "the trace says no call may be missing" "$(json_query "$TMPD/wrap.json" \
	'd["gpubpf"]["calls_may_be_missing"]')" "{}"
like "the summary line counts the events" "$(grep 'events,' "$TMPD/.check.out")" \
	'^gpubpf: [1-9][0-9]* events, 0 dropped, written to'

# 2. a program that dlopen()s the library by its full path, host calls only
check "record of a full-path dlopen exits 0" \
	"$GPUBPF" record -q --no-device -o "$TMPD/dlopen.json" -- \
	"$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/dlopen-truth.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/dlopen.json" \
	"$TMPD/dlopen-truth.json" "$probed"
is "cuInit is in the trace" "$(json_query "$TMPD/dlopen.json" \
	'len([e for e in ev if e.get("name") == "cuInit"])')" 1

# 3. -p on a process that loads the library later, by full path: held too
sh -c 'while [ ! -e "$1" ]; do sleep 0.01; done; exec "$2" "$3" "$4"' sh "$TMPD/go" \
	"$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/late-truth.json" 2>/dev/null &
late=$!
at_exit "kill $late 2>/dev/null"
"$GPUBPF" record -q --no-device -p "$late" -o "$TMPD/late.json" 2>"$TMPD/late.err" &
g=$!
at_exit "kill $g 2>/dev/null"
wait_recording "$TMPD/late.err"
touch "$TMPD/go"
wait "$late"
wait "$g"
is "record -p of a process that loads libcuda later exits 0" "$?" 0
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/late.json" "$TMPD/late-truth.json" \
	"$probed"
is "-p: cuInit is in the trace" "$(json_query "$TMPD/late.json" \
	'len([e for e in ev if e.get("name") == "cuInit"])')" 1

# 4. a process that leads its own process group, as an interactive shell's
# job does, is not stopped (its shell would take the terminal back): its
# library is probed when it is seen, and the loss that may cause is said
setpgrp_exec='import os, sys; os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])'
check "record of a process-group leader exits 0" \
	"$GPUBPF" record -q --no-device -o "$TMPD/job.json" -- \
	"$PY" -c "$setpgrp_exec" "$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/job-truth.json"
like "the summary line says calls may be missing" "$(grep 'events,' "$TMPD/.check.out")" \
	'^gpubpf: [0-9]+ events, 0 dropped, calls of 1 process may be missing, written to'
like "and why" "$(grep 'calls may be missing:' "$TMPD/.check.out")" \
	"pid [0-9]+: calls may be missing: it is a job of an interactive shell"
pid=$(json_query "$TMPD/job-truth.json" 'd["pid"]')
like "the trace metadata says so for that process" "$(json_query "$TMPD/job.json" \
	"d['gpubpf']['calls_may_be_missing'].get('$pid', '')")" "interactive shell"
# 5. a process under a debugger (strace) is not stopped either: said
if command -v strace >/dev/null 2>&1; then
	check "record of a process under strace exits 0" \
		"$GPUBPF" record -q --no-device -o "$TMPD/traced.json" -- strace -f -o /dev/null \
		"$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/traced-truth.json"
	like "under strace: why calls may be missing" "$(grep 'calls may be missing:' "$TMPD/.check.out")" \
		"calls may be missing: it runs under a debugger"
else
	skip "no strace" 2
fi

# 6. a kernel that cannot hold processes (GPUBPF_TEST_NO_HOLD): GPU timing
# on or off, the command is told its first calls may be missed, and the
# summary line and the trace say so
for dev in "" --no-device; do
	GPUBPF_TEST_NO_HOLD=1 "$GPUBPF" record -q $dev -o "$TMPD/nohold.json" -- sh -c \
		"LD_LIBRARY_PATH='$SIMLIB' exec '$PY' '$GPUBPF_ROOT/sim/train.py' --steps 2" \
		>/dev/null 2>"$TMPD/nohold.err"
	like "cannot hold${dev:+, $dev}: the warning is shown" "$(cat "$TMPD/nohold.err")" \
		"cannot hold the command when it loads one: its first calls may be missed"
	like "cannot hold${dev:+, $dev}: the summary line says calls may be missing" \
		"$(grep 'events,' "$TMPD/nohold.err")" "calls of 1 process may be missing"
	is "cannot hold${dev:+, $dev}: the trace says so" "$(json_query "$TMPD/nohold.json" \
		'len(d["gpubpf"]["calls_may_be_missing"])')" 1
done

# 7. a recorder that is itself stopped (Ctrl-Z, SIGSTOP) stops nobody: a
# process that maps a libcuda meanwhile runs on, and is said to be missing
# calls once the recorder goes on.  Stopped once the command runs, which
# the recorder lets it do once set up (stopped after a fixed 1 s, a CI run
# stopped it in its setup, under load longer: the command never ran)
"$GPUBPF" record -q --no-device -o "$TMPD/away.json" -- sh -c ': >"$5"; while [ ! -e "$1" ]; do \
sleep 0.02; done; exec "$2" "$3" "$4"' sh "$TMPD/away-go" "$TESTBIN/cudacalls" \
	"$SIMLIB/libcuda.so.1" "$TMPD/away-truth.json" "$TMPD/away-started" >/dev/null \
	2>"$TMPD/away.err" &
g=$!
at_exit "kill -CONT $g 2>/dev/null; kill $g 2>/dev/null"
wait_for_file "$TMPD/away-started" 20
kill -STOP "$g"
sleep 1.5
touch "$TMPD/away-go"
if wait_for_file "$TMPD/away-truth.json" 20; then
	pass "the recorder stopped: the process mapping libcuda ran to its end"
else
	fail "the recorder stopped: the process mapping libcuda ran to its end"
fi
kill -CONT "$g"
wait "$g"
is "the recorder went on and exited 0" "$?" 0
like "it says the calls of that process may be missing, and why" "$(cat "$TMPD/away.err")" \
	"calls may be missing: gpubpf was not running \\(stopped, or starved of the CPU\\)"

# 7b. a recorder whose collector is busy for a while (a slow setup, a
# backlog) but runs on still holds the process that maps libcuda: its
# reader thread says it is alive (a CI run once lost the chrooted
# command's first calls, below, as if the recorder were stopped): the
# command maps libcuda 1.2 s after its start, while the collector is away
# from the ring for 2.5 s
GPUBPF_TEST_BUSY_MS=2500 "$GPUBPF" record -q --no-device -o "$TMPD/busy.json" -- \
	sh -c 'sleep 1.2; exec "$@"' sh "$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" \
	"$TMPD/busy-truth.json" >/dev/null 2>"$TMPD/busy.err"
is "a collector busy for 2.5 s: record exits 0" "$?" 0
is "it held the process: cuInit is in the trace" "$(json_query "$TMPD/busy.json" \
	'len([e for e in ev if e.get("name") == "cuInit"])')" 1
is "and no call may be missing" "$(json_query "$TMPD/busy.json" \
	'd["gpubpf"]["calls_may_be_missing"]')" "{}"
# 7c. a collector with no sign of life for 5 s seems hung: a process that
# maps libcuda later runs on unheld (at 6.5 s, the collector away for 8 s)
GPUBPF_TEST_BUSY_MS=8000 "$GPUBPF" record -q --no-device -o "$TMPD/hung.json" -- \
	sh -c 'sleep 6.5; exec "$@"' sh "$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" \
	"$TMPD/hung-truth.json" >/dev/null 2>"$TMPD/hung.err"
is "a collector away for 8 s: record exits 0" "$?" 0
like "the process ran on unheld, its calls may be missing, and why" "$(cat "$TMPD/hung.err")" \
	"calls may be missing: gpubpf was not running \\(stopped, or starved of the CPU\\) or its collector seemed hung"

# 8. a system booted without tracefs mounted (as a GPU VM image here was):
# gpubpf mounts it, and holds the command as before (a private mount
# namespace, so this machine's own mounts stay as they are)
if unshare -m true 2>/dev/null; then
	unshare -m sh -c 'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null
		test -e /sys/kernel/tracing/events && exit 3
		"$@"; rc=$?; grep -c " /sys/kernel/tracing tracefs " /proc/self/mounts >&2; exit $rc' sh \
		"$GPUBPF" record -v -q --no-device -o "$TMPD/notracefs.json" -- sh -c \
		"LD_LIBRARY_PATH='$SIMLIB' exec '$PY' '$GPUBPF_ROOT/sim/train.py' --steps 2" \
		>/dev/null 2>"$TMPD/notracefs.err"
	is "tracefs unmounted: record exits 0" "$?" 0
	like "it says it mounted tracefs" "$(cat "$TMPD/notracefs.err")" \
		"gpubpf: mounted tracefs on /sys/kernel/tracing"
	is "tracefs is mounted in that namespace afterwards" "$(tail -1 "$TMPD/notracefs.err")" 1
	is "and the command was held: no call may be missing" "$(json_query "$TMPD/notracefs.json" \
		'd["gpubpf"]["calls_may_be_missing"]')" "{}"
else
	skip "cannot make a mount namespace (unshare -m)" 4
fi

# 9. a process chrooted inside a mount namespace of its own, as Apptainer
# runs containers: its maps give its files' paths from that namespace's
# root, not from its own, so /proc/PID/root and that path lead nowhere;
# its libcuda is found and probed through /proc/PID/map_files, held at its
# mmap with -- CMD, and with -p once it loads it
if unshare -m true 2>/dev/null; then
	mkdir -p "$TMPD/croot"
	# CMD... run with the whole tree bound at $TMPD/croot, chrooted there
	chrooted=(unshare -m --propagation private sh -c
		'mount --rbind / "$1" || exit 126; r=$1; shift; exec chroot "$r" "$@"' sh "$TMPD/croot")
	check "chrooted in a namespace of its own: record -- CMD exits 0" \
		"$GPUBPF" record -q --no-device -o "$TMPD/chroot.json" -- "${chrooted[@]}" \
		"$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/chroot-truth.json"
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/chroot.json" \
		"$TMPD/chroot-truth.json" "$probed"
	is "chrooted: cuInit is in the trace" "$(json_query "$TMPD/chroot.json" \
		'len([e for e in ev if e.get("name") == "cuInit"])')" 1
	is "chrooted: no call may be missing" "$(json_query "$TMPD/chroot.json" \
		'd["gpubpf"]["calls_may_be_missing"]')" "{}"
	"${chrooted[@]}" sh -c 'while [ ! -e "$1" ]; do sleep 0.01; done; exec "$2" "$3" "$4"' sh \
		"$TMPD/cgo" "$TESTBIN/cudacalls" "$SIMLIB/libcuda.so.1" "$TMPD/cp-truth.json" 2>/dev/null &
	cp=$!
	at_exit "kill $cp 2>/dev/null"
	"$GPUBPF" record -q --no-device -p "$cp" -o "$TMPD/cp.json" 2>"$TMPD/cp.err" &
	g=$!
	at_exit "kill $g 2>/dev/null"
	wait_recording "$TMPD/cp.err"
	touch "$TMPD/cgo"
	wait "$cp"
	wait "$g"
	is "chrooted, -p: record exits 0" "$?" 0
	tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" "$TMPD/cp.json" "$TMPD/cp-truth.json" \
		"$probed"
else
	skip "cannot make a mount namespace (unshare -m)" 12
fi

# a job whose libcuda was replaced on disk after it loaded it (a driver
# upgraded under it): probed through its mapping (gpubpf said it had never
# loaded libcuda, and recorded nothing)
mkdir "$TMPD/upg"
cp "$SIMLIB/libcuda.so.1" "$TMPD/upg/"
LD_LIBRARY_PATH="$TMPD/upg" "$TESTBIN/cudaloop" "$TMPD/upg/libcuda.so.1" 50 "$TMPD/upg.stop" \
	>"$TMPD/upg.out" 2>&1 &
w=$!
at_exit "kill $w 2>/dev/null"
wait_for_cmd 20 grep -q libcuda "/proc/$w/maps"
cp "$SIMLIB/libcuda.so.1" "$TMPD/upg/new.so"
mv "$TMPD/upg/new.so" "$TMPD/upg/libcuda.so.1"
like "replaced: the job's maps say its libcuda was deleted" "$(grep libcuda "/proc/$w/maps" | head -n 1)" \
	"libcuda.so.1 \(deleted\)$"
check "replaced: record -p" "$GPUBPF" record -q -p "$w" -d 700ms -o "$TMPD/upg.json"
cmp_ok "replaced: its launches are recorded" "$(json_query "$TMPD/upg.json" \
	'len([e for e in ev if e.get("name") == "cuLaunchKernel"])')" -gt 0
cmp_ok "replaced: with their kernels (a late attach)" "$(json_query "$TMPD/upg.json" \
	'len([e for e in ev if e.get("cat") == "kernel"])')" -gt 0
touch "$TMPD/upg.stop"
wait "$w"
is "replaced: the job ran on untouched" "$?:$(grep -c 'errors=0' "$TMPD/upg.out")" "0:1"

check "report of that trace" "$GPUBPF" report "$TMPD/job.json"
like "the report says so too" "$(cat "$TMPD/.check.out")" \
	"calls of pid $pid may be missing: it is a job of an interactive shell"
check "report --format json of that trace" "$GPUBPF" report --format json -o "$TMPD/job.r.json" "$TMPD/job.json"
like "and in JSON" "$(json_query "$TMPD/job.r.json" "d['calls_may_be_missing'].get('$pid', '')")" \
	"interactive shell"
check "report of a trace where no call can be missing" "$GPUBPF" report "$TMPD/wrap.json"
is "it says nothing of missing calls" "$(grep -c "may be missing" "$TMPD/.check.out")" 0
done_testing
