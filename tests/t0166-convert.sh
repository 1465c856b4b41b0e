#!/usr/bin/env bash
# gpubpf convert IN OUT: a JSON trace read back into the model and written
# in the format OUT names gives the very files record writes from the
# model itself; bad input is one line and no output.
. "$(dirname "$0")/lib.sh"
test_description "convert: .json -> .pftrace/.json.gz/.json exactly as record writes them; bad input"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"

check "record to .json and .pftrace at once" "$GPUBPF" record -q -o "$TMPD/a.json" \
	-o "$TMPD/a.pftrace" -- "$PY" "$GPUBPF_ROOT/sim/train.py" --steps 4 --sync-every 2
check "convert .json -> .pftrace" "$GPUBPF" convert "$TMPD/a.json" "$TMPD/b.pftrace"
check "the same bytes as record's .pftrace" cmp "$TMPD/a.pftrace" "$TMPD/b.pftrace"
check "convert .json -> .json.gz" "$GPUBPF" convert "$TMPD/a.json" "$TMPD/b.json.gz"
check "convert .json.gz -> .json" "$GPUBPF" convert "$TMPD/b.json.gz" "$TMPD/c.json"
check "the round trip gives record's .json back" cmp "$TMPD/a.json" "$TMPD/c.json"

# bad input: one line naming what is wrong, exit 1, no output file
bad() {
	local what=$1 want=$2 out rc=0
	shift 2
	out=$("$GPUBPF" convert "$@" 2>&1 >/dev/null) || rc=$?
	is "$what: exit 1" "$rc" 1
	like "$what: says so" "$out" "$want"
	is "$what: one line" "$(printf '%s\n' "$out" | wc -l)" 1
}
printf '{"traceEvents":[]}\n' >"$TMPD/foreign.json"
head -c 2000 "$TMPD/a.json" >"$TMPD/cut.json"
bad "no such file" "gpubpf: $TMPD/none.json: " "$TMPD/none.json" "$TMPD/x.pftrace"
bad "another tool's trace" "not a gpubpf trace" "$TMPD/foreign.json" "$TMPD/x.pftrace"
bad "a truncated trace" "truncated" "$TMPD/cut.json" "$TMPD/x.pftrace"
bad "a .pftrace input" "convert reads .json and .json.gz" "$TMPD/a.pftrace" "$TMPD/x.json"
bad "an unknown output format" "unsupported output format" "$TMPD/a.json" "$TMPD/x.txt"
bad "an unwritable output" "/nonexistent-dir" "$TMPD/a.json" /nonexistent-dir/x.pftrace
ok "no output was left behind" test ! -e "$TMPD/x.pftrace" -a ! -e "$TMPD/x.json"
check_fails "one argument is a usage error" "$GPUBPF" convert "$TMPD/a.json"
done_testing
