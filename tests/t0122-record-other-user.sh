#!/usr/bin/env bash
# record -p of a job that runs as another user: with every capability,
# all of it (calls, Python stacks, GPU timing by late attach); without
# CAP_SYS_PTRACE (a container given CAP_BPF and CAP_PERFMON only), its
# host calls, and one line each for what that takes away.  It used to
# stop at once: "cannot read '/proc/N/map_files/...': Permission denied".
. "$(dirname "$0")/lib.sh"
test_description "record -p of another user's job"
require_bpf
require_sim
require_cmd setpriv
id nobody >/dev/null 2>&1 || skip_all "no user 'nobody' to run the job as"
as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
"${as_nobody[@]}" test -r "$GPUBPF_ROOT/sim/train.py" -a -r "$SIMLIB/libcuda.so.1" ||
	skip_all "user nobody cannot read $GPUBPF_ROOT (its directories are not world-readable)"
no_ptrace=(setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace)
probed=$(probed_list)
export LD_LIBRARY_PATH="$SIMLIB"
chmod 755 "$TMPD"
mkdir -m 1777 "$TMPD/job"

truth_since() { # TRUTH T OUT
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
json.dump([c for c in d if c["t0_ns"] >= int(sys.argv[2])], open(sys.argv[3], "w"))' "$@"
}
monotonic_ns() { "$PY" -c 'import time; print(time.monotonic_ns())'; }

# record_job NAME [WRAPPER...]: a job of user nobody that has loaded
# libcuda and waits for a go file, recorded by gpubpf (run through the
# wrapper) from the go to its end; its truth since the go in NAME.since.json.
record_job() {
	local name=$1 job g
	shift
	"${as_nobody[@]}" "$PY" "$GPUBPF_ROOT/sim/train.py" --steps 6 \
		--wait-file "$TMPD/job/go-$name" --truth "$TMPD/job/$name.truth.json" \
		2>"$TMPD/$name.job.err" &
	job=$!
	wait_for_cmd 20 grep -q libcuda "/proc/$job/maps"
	"$@" "$GPUBPF" record -q -p "$job" -d 60s -o "$TMPD/$name.json" 2>"$TMPD/$name.err" &
	g=$!
	wait_recording "$TMPD/$name.err"
	local t_go
	t_go=$(monotonic_ns)
	touch "$TMPD/job/go-$name"
	wait "$job"
	is "$name: the job ran to its end" "$?" 0
	wait "$g"
	is "$name: record exits 0" "$?" 0
	JOB=$job
	truth_since "$TMPD/job/$name.truth.json" "$t_go" "$TMPD/$name.since.json"
}

launches_with_stacks() { # TRACE
	json_query "$1" '[len([e for e in ev if e.get("name") == "cuLaunchKernel"]),
len([e for e in ev if e.get("name") == "cuLaunchKernel" and
     any("train.py" in f for f in e.get("args", {}).get("stack", []))])]'
}

# 1. gpubpf with every capability: the whole recording.
record_job full
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" --sim-syncs \
	"$TMPD/full.json" "$TMPD/full.since.json" "$probed"
read -r n s < <(launches_with_stacks "$TMPD/full.json" | tr -d '[],')
cmp_ok "full: launches recorded" "$n" -ge 6
is "full: every launch has its Python stack" "$s" "$n"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_gpu.py" "$TMPD/full.json" "$TMPD/full.since.json"
is "full: no line of a missing capability" "$(grep -c 'CAP_SYS_PTRACE' "$TMPD/full.err")" 0

# 2. Without CAP_SYS_PTRACE: its /proc/PID/root, exe and memory are out of
# reach, its maps are not.  The libcuda it maps is probed by its path here
# (the same file: device and inode), its calls are all recorded, and what
# needs the rest is named once.
record_job noptrace "${no_ptrace[@]}"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_trace.py" \
	"$TMPD/noptrace.json" "$TMPD/noptrace.since.json" "$probed"
err=$(cat "$TMPD/noptrace.err")
like "noptrace: it says why there are no Python stacks" "$err" \
	"gpubpf: pid $JOB: no Python stacks: cannot read pid $JOB: Permission denied \\(needs CAP_SYS_PTRACE where it runs as another user"
like "noptrace: and why there is no GPU timing" "$err" \
	"gpubpf: pid $JOB: GPU timing off: ptrace not allowed \\(needs CAP_SYS_PTRACE"
is "noptrace: each said once" "$(grep -c 'CAP_SYS_PTRACE' "$TMPD/noptrace.err")" 2
is "noptrace: the trace keeps the GPU reason" "$(json_query "$TMPD/noptrace.json" \
	'd["gpubpf"]["gpu"]["errors"].get("'"$JOB"'", "")[:20]')" "ptrace not allowed ("
read -r n s < <(launches_with_stacks "$TMPD/noptrace.json" | tr -d '[],')
cmp_ok "noptrace: launches recorded" "$n" -ge 6
is "noptrace: no launch has a stack" "$s" 0

# 3. A process whose maps gpubpf cannot read (here: pid 1, where this
# machine's init is out of reach) is refused at once, in one line: the
# wait for a libcuda it cannot see would never end.
if head -c1 /proc/1/maps >/dev/null 2>&1; then
	skip "pid 1's maps are readable here: no process to try an unreadable one on" 3
else
	"$GPUBPF" record -p 1 -d 2s -o "$TMPD/init.json" 2>"$TMPD/init.err"
	isnt "maps unreadable: a non-zero exit" "$?" 0
	is "maps unreadable: one line" "$(cat "$TMPD/init.err")" \
		"gpubpf: cannot read the maps of pid 1: Permission denied (needs CAP_SYS_PTRACE where it runs as another user or with capabilities gpubpf lacks)"
	check "maps unreadable: no file written" test ! -e "$TMPD/init.json"
fi

done_testing
