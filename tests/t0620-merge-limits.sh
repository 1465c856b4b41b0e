#!/usr/bin/env bash
# test-timeout: 240
# merge's memory and size limits (issue #10, item 5): the reorder window is
# bounded in bytes as well as in events, so a tiny .json.gz of huge events
# (15 events of 64 MiB in 0.98 MB) merges in bounded memory; an event over
# the documented 256 MiB is refused with one line, exit 1, and no output
# (not even a half-written one), while one of exactly 256 MiB is accepted.
. "$(dirname "$0")/lib.sh"
test_description "merge: reorder window bounded in bytes, 256 MiB per event"
require_gpubpf
require_cmd "$PY"

GEN="$PY $GPUBPF_ROOT/tests/cluster/gentrace.py"
BIG="$PY $GPUBPF_ROOT/tests/cluster/bigevents.py"
cd "$TMPD" || bail_out "no temporary directory"

# peak OUT-STDERR CMD...: run CMD, print "exit-status peak-RSS-in-KiB"
peak() {
	"$PY" - "$@" <<'PYEOF'
import resource, subprocess, sys
with open(sys.argv[1], "w") as err:
    rc = subprocess.call(sys.argv[2:], stderr=err)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PYEOF
}

# no_output FILE: neither FILE nor a temporary of it was left behind
no_output() {
	[[ ! -e "$1" && -z $(find . -name ".$1.*") ]]
}

# --- the reorder window in bytes --------------------------------------------
$BIG -o big.json.gz --events 15 --mib 64
diag "15 events of 64 MiB: $(stat -c %s big.json.gz) bytes compressed"
read -r rc kib < <(peak big.err "$GPUBPF" merge -q -o big-m.json.gz big.json.gz)
is "15 events of 64 MiB merge" "$rc" 0
diag "peak RSS $((kib / 1024)) MiB (bound 300 MiB: the 64 MiB window, the reader's buffer, one event)"
cmp_ok "... in under 300 MiB (held all 15 events, 1.1 GiB, before)" "$kib" -lt $((300 * 1024))
is "... every big event intact in the output" "$("$PY" - big-m.json.gz <<'PYEOF'
import gzip, sys
n = ok = 0
for line in gzip.open(sys.argv[1], "rb"):
    if b'"cat":"big"' in line[:200]:
        n += 1
        ok += line.rstrip(b",\n").endswith(b'a"}}') and len(line) > 64 << 20
print(n, ok)
PYEOF
)" "15 15"
rm -f big-m.json.gz

# the byte bound applies to ordinary events too: 300 shuffled events
# reorder within 4096 events, not within 256 bytes
$GEN -o a.json --host node1 --pids 100 --events 100
$GEN -o u.json --host node2 --pids 100 --events 300 --shuffle 50
check "a slightly unsorted input merges with the default window" \
	"$GPUBPF" merge -q -o u-ok.json a.json u.json
"$GPUBPF" merge -q --reorder-window-bytes 256 -o u-out.json a.json u.json 2>u.err
is "with --reorder-window-bytes 256 it is refused: exit 1" "$?" 1
like "... naming the options" "$(cat u.err)" \
	'^gpubpf: u\.json: events out of time order beyond the reorder window .*--reorder-window-bytes$'
ok "... and no output" no_output u-out.json
for v in 0 -1 x 12Q 2T; do
	check_fails "--reorder-window-bytes $v refused" "$GPUBPF" merge -o v.json \
		--reorder-window-bytes "$v" a.json
done
check "--reorder-window-bytes 1M accepted" "$GPUBPF" merge -q -o v.json --reorder-window-bytes 1M a.json u.json

# --- 256 MiB per event ------------------------------------------------------
# over the limit by one byte, after three small events: the merge has begun
# writing when it meets it (--reorder-window 1)
$BIG -o over.json.gz --small 3 --events 1 --bytes $((256 * 1048576 + 1))
rc=0
err=$("$GPUBPF" merge -q --reorder-window 1 -o over-m.json a.json over.json.gz 2>&1) || rc=$?
is "an event of 256 MiB + 1 byte: exit 1" "$rc" 1
like "... one line naming the file, line and limit" "$err" \
	'^gpubpf: over\.json\.gz: the event at line 5 is over 256 MiB \(the most one event may hold\)$'
ok "... no output, no half-written temporary" no_output over-m.json
rc=0
err=$("$GPUBPF" report over.json.gz 2>&1 >/dev/null) || rc=$?
like "report refuses it too, with the same line" "$rc:$err" \
	'^1:gpubpf: over\.json\.gz: the event at line 5 is over 256 MiB'
rm -f over.json.gz

$BIG -o at.json.gz --small 3 --events 1 --bytes $((256 * 1048576))
read -r rc kib < <(peak at.err "$GPUBPF" merge -q -o at-m.json.gz at.json.gz)
is "an event of exactly 256 MiB is accepted" "$rc" 0
diag "peak RSS $((kib / 1024)) MiB"
cmp_ok "... in under 640 MiB (the reader's buffer and the event)" "$kib" -lt $((640 * 1024))
is "... and written whole" "$("$PY" - at-m.json.gz <<'PYEOF'
import gzip, sys
big = [l.rstrip(b",\n") for l in gzip.open(sys.argv[1], "rb") if b'"cat":"big"' in l[:200]]
print(len(big), [l.endswith(b"a" * 100 + b'"}}') and len(l) >= 256 << 20 for l in big])
PYEOF
)" "1 [True]"
done_testing
