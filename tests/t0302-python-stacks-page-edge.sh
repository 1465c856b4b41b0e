#!/usr/bin/env bash
# Python stacks where a code object's file name and line table end a page
# that one not yet faulted in follows (BPF cannot read it): each frame
# named from its own bytes, never "?", on each CPython 3.6-3.11 (whose
# code tokens fold those bytes) and on one newer.
. "$(dirname "$0")/lib.sh"
test_description "Python stacks: code objects at the end of a page"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
mapfile -t pythons < <(cpythons 3.6 3.7 3.8 3.9 3.10 3.11 3.12)
((${#pythons[@]})) || skip_all "no CPython 3.6+ found"
for py in "${pythons[@]}"; do
	name="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
	if check "$name: record" "$GPUBPF" record -o "$TMPD/e.json" -- \
		"$py" "$GPUBPF_ROOT/tests/py/page_edge.py" "$TMPD/truth.json"; then
		like "$name: 15 calls made" "$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' \
			"$TMPD/truth.json")" "^15$"
		tap_from "$PY" "$GPUBPF_ROOT/tests/check_stacks.py" "$TMPD/e.json" "$TMPD/truth.json" 64
	fi
done
done_testing
