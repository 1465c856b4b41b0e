#!/usr/bin/env bash
# gpubpf merge on synthetic traces with known clocks (tests/cluster/
# gentrace.py): alignment by realtime offsets exact to the nanosecond,
# colliding pids and flow ids kept apart, .json.gz and pretty-printed
# inputs, slightly unsorted input, --align-collectives recovering known
# skews, every kind of bad input refused with one line and no output; and
# a real recording merged with itself shifted.
. "$(dirname "$0")/lib.sh"
test_description "merge: clock alignment, pid remapping, collectives, bad inputs"
require_gpubpf
require_cmd "$PY"

GEN="$PY $GPUBPF_ROOT/tests/cluster/gentrace.py"
CHECK="$GPUBPF_ROOT/tests/cluster/check_merge.py"
cd "$TMPD" || bail_out "no temporary directory"

# three hosts, clocks booted at different times, the same pids on all
$GEN -o a.json --host node1 --offset 1700000000000000000 --pids 100,200 --events 600 --nccl 40
$GEN -o b.json.gz --host node2 --offset 1699999000000123456 --pids 100,300 --events 600 --nccl 40
$GEN -o c.json --host node3 --offset 1700000500000000789 --pids 100 --events 600 --nccl 40 \
	--pretty --shuffle 30
check "merge of three traces (.json, .json.gz, pretty-printed and unsorted)" \
	"$GPUBPF" merge -o m.json a.json b.json.gz c.json
tap_from "$PY" "$CHECK" m.json --hosts node1,node2,node3 --inputs a.json,b.json.gz,c.json

check "gzip output" "$GPUBPF" merge -q -o m.json.gz a.json b.json.gz c.json
is "gzip output holds the same trace" "$(zcat m.json.gz | md5sum)" "$(md5sum <m.json)"

like "one trace: its summary line" "$("$GPUBPF" merge -o one.json a.json 2>&1)" \
	"^gpubpf: merged 1 trace \\(node1\\), [0-9]+ events, written to one.json$"

# two traces of one host name are told apart
$GEN -o d.json --host node1 --offset 1700000000000000000 --pids 100 --events 50
check "merge of two traces from hosts with the same name" "$GPUBPF" merge -o dup.json a.json d.json
is "the second gets a suffix" "$(json_query dup.json '[h["host"] for h in d["gpubpf"]["merge"]["hosts"]]')" \
	'["node1", "node1#2"]'

# residual skews that only collectives reveal; node2 missed 3 collectives
$GEN -o s1.json --host node1 --offset 1700000000000000000 --pids 100 --events 400 --nccl 60
$GEN -o s2.json --host node2 --offset 1699999000000123456 --skew-ns 123456 --pids 100 \
	--events 400 --nccl 60 --nccl-skip 3
$GEN -o s3.json.gz --host node3 --offset 1700000500000000789 --skew-ns -2500321 --pids 100 \
	--events 400 --nccl 60
"$GPUBPF" merge --align-collectives -o s.json s1.json s2.json s3.json.gz 2>skew.err
is "--align-collectives exits 0" "$?" 0
diag <skew.err
tap_from "$PY" "$CHECK" s.json --hosts node1,node2,node3 --inputs s1.json,s2.json,s3.json.gz \
	--tolerance-ns 1000 --skew node2=123456,node3=-2500321
like "the skew found is reported on stderr" "$(grep node2 skew.err)" \
	'^gpubpf: node2: clock skew \+123\.[0-9]{3} us against node1 \(57 NCCL kernels matched'
"$GPUBPF" merge -q -o noalign.json s1.json s2.json s3.json.gz
is "without --align-collectives the skew stays (node3 events 2500 us early)" \
	"$(json_query noalign.json 'sorted({round(float(e["ts"]) * 1000) + d["gpubpf"].get("ts_base_ns", 0) - (e["args"]["rt"] - d["gpubpf"]["realtime_offset_ns"]) for e in ev if e.get("args", {}).get("host") == "node3" and "rt" in e["args"]})')" \
	'[-2500321]'
is "skew_ns is null without the refinement" \
	"$(json_query noalign.json '[h["skew_ns"] for h in d["gpubpf"]["merge"]["hosts"]]')" '[null, null, null]'

# unsorted beyond the reorder window
$GEN -o u.json --host node9 --pids 100 --events 300 --shuffle 50
"$GPUBPF" merge --reorder-window 1 -o u-out.json a.json u.json 2>u.err
is "an input out of order beyond the window: exit 1" "$?" 1
like "... naming the file and the window" "$(cat u.err)" \
	'^gpubpf: u\.json: events out of time order beyond the reorder window \(line [0-9]+'
ok "... and no output" test ! -e u-out.json

# bad inputs: one line naming the file, exit 1, no output file
: >empty.json
echo hello >notjson.json
echo '{"traceEvents":[{"ph":"X","name":"k","pid":1,"tid":1,"ts":1,"dur":1}]}' >foreign.json
echo '[{"ph":"X","ts":1}]' >array.json
head -c 20000 a.json >trunc.json
head -c 3000 b.json.gz >trunc.json.gz
$GEN -o v9.json --host node9 --version 9.9.0
printf '{"gpubpf":{"version":"0.1.0","host":"x"},"traceEvents":[]}' >nooffset.json
printf '{"gpubpf":{"version":"0.1.0","host":"x","realtime_offset_ns":5},"traceEvents":[{"ph":"X","ts":1,"dur":tru}]}' >badvalue.json
bad_input() { # file expected-message-regex
	local rc=0 err
	err=$("$GPUBPF" merge -o out.json a.json "$1" 2>&1) || rc=$?
	if ((rc == 1)) && [[ "$err" =~ $2 ]] && [[ $(wc -l <<<"$err") == 1 ]] &&
		[[ ! -e out.json ]] && [[ -z $(find . -name '.out.json.*') ]]; then
		pass "$1 refused: $err"
	else
		fail "$1 refused with one clear line, exit 1, no output"
		diag "exit status $rc, output: $err"
	fi
	rm -f out.json
}
bad_input empty.json '^gpubpf: empty\.json: empty file$'
bad_input notjson.json '^gpubpf: notjson\.json: not JSON'
bad_input foreign.json '^gpubpf: foreign\.json: not a gpubpf trace \(no "gpubpf" object\)$'
bad_input array.json '^gpubpf: array\.json: not a gpubpf trace'
bad_input trunc.json '^gpubpf: trunc\.json: truncated \(the file ends inside "traceEvents" after [0-9]+ events'
bad_input trunc.json.gz '^gpubpf: trunc\.json\.gz: truncated'
bad_input v9.json '^gpubpf: v9\.json: recorded by gpubpf 9\.9\.0, but a\.json by 0\.1\.0 \(major\.minor differ'
bad_input nooffset.json '^gpubpf: nooffset\.json: .*no realtime_offset_ns'
bad_input badvalue.json '^gpubpf: badvalue\.json: invalid JSON at line 1'
bad_input missing.json '^gpubpf: missing\.json: cannot open: No such file or directory$'
check_fails "no trace given" "$GPUBPF" merge -o out.json
check_fails "unsupported output format" "$GPUBPF" merge -o out.txt a.json
cp a.json a-keep.json
"$GPUBPF" merge -o a-keep.json b.json.gz a-keep.json 2>same.err
is "-o an input: exit 1" "$?" 1
is "... says so" "$(cat same.err)" "gpubpf: -o 'a-keep.json' is also an input: write the merge elsewhere"
check "... and leaves it as it was" cmp a.json a-keep.json

# a full disk is said as such (it was "too many distinct pids and tids")
if [[ $(id -u) -eq 0 ]] && mkdir full && mount -t tmpfs -o size=64k gpubpf-test full; then
	at_exit "umount '$TMPD/full' 2>/dev/null"
	for out in m.json m.pftrace; do
		"$GPUBPF" merge -q -o "full/$out" a.json b.json.gz 2>full.err
		is "a full disk, $out: exit 1" "$?" 1
		is "... says so, naming the output" "$(cat full.err)" \
			"gpubpf: cannot write 'full/$out': No space left on device"
		is "... and leaves nothing" "$(ls -A full)" ""
	done
else
	skip "a full disk needs root to mount a small tmpfs" 6
fi

# a real recording, merged with a copy of itself whose clock is 1 s later
if [[ $(id -u) -eq 0 && -e "$SIMLIB/libcuda.so.1" && -r /sys/kernel/btf/vmlinux ]]; then
	LD_LIBRARY_PATH="$SIMLIB" "$GPUBPF" record -o real.json -- \
		"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 3 >/dev/null 2>&1
	"$PY" - real.json real2.json <<'PYEOF'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r'"realtime_offset_ns":(-?\d+)', lambda m: '"realtime_offset_ns":%d' % (int(m.group(1)) + 1000000000), s, 1)
s = s.replace('"host":"', '"host":"twin-', 1)
open(sys.argv[2], "w").write(s)
PYEOF
	check "a real recording merges with its twin" "$GPUBPF" merge -o real-m.json real.json real2.json
	is "the twin's events are 1 s later, the same pids remapped" \
		"$(json_query real-m.json 'sorted({round(float(b["ts"]) - float(a["ts"]), 3) for a, b in zip([e for e in ev if e["ph"] == "X" and e["pid"] < 10**7], [e for e in ev if e["ph"] == "X" and e["pid"] >= 10**7])})')" \
		'[1000000.0]'
	is "two process groups" "$(json_query real-m.json '[e["args"]["host"] for e in ev if e["name"] == "process_name"]')" \
		"[\"$(json_query real.json 'd["gpubpf"]["host"]')\", \"twin-$(json_query real.json 'd["gpubpf"]["host"]')\"]"
	perfetto_ok real-m.json
	is "no displayTimeUnit (Perfetto 4-21 would show the trace 1000x short)" \
		"$(json_query real-m.json '"displayTimeUnit" in d')" false
	check "a .pftrace input: the twin converted" "$GPUBPF" convert real2.json real2.pftrace
	check "a .pftrace input merges" "$GPUBPF" merge -o real-mp.json real.json real2.pftrace
	is "a .pftrace input: the same events as its JSON's merge" \
		"$("$PY" -c 'import json, sys; a, b = (json.load(open(f))["traceEvents"] for f in sys.argv[1:]); print(a == b, len(a))' real-m.json real-mp.json)" \
		"True $(json_query real-m.json 'len(ev)')"
	check "-o .pftrace: the same merge in Perfetto's format" "$GPUBPF" merge -o real-m.pftrace \
		real.json real2.json
	is "-o .pftrace: no temporary file left" "$(ls -A | grep -c '^\.merge-')" 0
	if tp=$(trace_processor); then
		# thread states and samples are left out: merge renumbers their
		# tracks, and the importer cannot tell whose they are (README)
		is "-o .pftrace: the same slices per category as the .json merge" \
			"$(echo "select category, count(*) from slice where category not in ('gpubpf', 'thread_state', 'sample') group by 1 order by 1" | "$tp" query real-m.pftrace 2>/dev/null)" \
			"$(echo "select category, count(*) from slice where category not in ('thread_state', 'sample') group by 1 order by 1" | "$tp" query real-m.json 2>/dev/null)"
	else
		skip "Perfetto's trace_processor_shell not found" 1
	fi
	# the same recording as if made after 200 days of uptime (its base and
	# its realtime offset moved the other way: the same wall-clock times)
	"$PY" - real.json old.json <<'PYEOF'
import re, sys
d = 200 * 86400 * 10**9
s = open(sys.argv[1]).read()
s = re.sub(r'"realtime_offset_ns":(-?\d+)', lambda m: '"realtime_offset_ns":%d' % (int(m.group(1)) - d), s, 1)
s = re.sub(r'"ts_base_ns":(\d+)', lambda m: '"ts_base_ns":%d' % (int(m.group(1)) + d), s, 1)
s = s.replace('"host":"', '"host":"old-', 1)
open(sys.argv[2], "w").write(s)
PYEOF
	check "it merges with the original" "$GPUBPF" merge -o old-m.json real.json old.json
	is "every event of both lands on the same nanosecond (exact ts after ts_base_ns)" "$("$PY" - <<'PYEOF'
import decimal, json
def times(path, pids):
    d = json.load(open(path), parse_float=decimal.Decimal)
    base = d["gpubpf"]["ts_base_ns"]
    return [base + int(e["ts"] * 1000) for e in d["traceEvents"] if e["ph"] == "X" and pids(e["pid"])]
real = times("real.json", lambda p: True)
print(times("old-m.json", lambda p: p < 10**7) == real and times("old-m.json", lambda p: p >= 10**7) == real)
PYEOF
)" True
else
	skip "recording needs root, BPF and the simulated driver" 12
fi
done_testing
