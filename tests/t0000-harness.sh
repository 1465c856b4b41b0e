#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# test-timeout: 60
. "$(dirname "$0")/lib.sh"

test_description "tests/lib.sh itself: results, plans, skips, helpers"
plan 25

# Run a small test script that sources lib.sh; its stdout goes to
# $TMPD/NAME.out, its exit status to $TMPD/NAME.rc.
inner() {
	local name=$1 rc=0
	{
		echo ". '$GPUBPF_ROOT/tests/lib.sh'"
		cat
	} >"$TMPD/$name.sh"
	bash "$TMPD/$name.sh" >"$TMPD/$name.out" 2>"$TMPD/$name.err" </dev/null || rc=$?
	echo "$rc" >"$TMPD/$name.rc"
}

# only the TAP lines (no diagnostics)
tap() {
	grep -E '^(ok|not ok|1\.\.)' "$TMPD/$1.out" || true
}

inner good <<'EOF'
plan 6
pass "p"
is "is" "a b" "a b"
check "check true" true
ok "ok" test 1 -eq 1
cmp_ok "cmp" 3 '<' 5
skip "no reason" 1
EOF
is "passing results" "$(tap good | tr '\n' '|')" \
	"1..6|ok 1 - p|ok 2 - is|ok 3 - check true|ok 4 - ok|ok 5 - cmp|ok 6 # SKIP no reason|"
is "passing script exits 0" "$(cat "$TMPD/good.rc")" 0

inner bad <<'EOF'
plan 6
fail "f"
is "is" "a" "b"
check "check false" false
check_fails "check_fails true" true
like "like" "abc" '^b'
cmp_ok "cmp" 5 -lt 3
EOF
is "failing results" "$(tap bad | tr '\n' '|')" \
	"1..6|not ok 1 - f|not ok 2 - is|not ok 3 - check false|not ok 4 - check_fails true|not ok 5 - like|not ok 6 - cmp|"
is "is shows got and expected" "$(grep -c -E "^# +(got|expected): '[ab]'" "$TMPD/bad.out")" 2
is "complete plan ending on a failure exits 0" "$(cat "$TMPD/bad.rc")" 0

inner short <<'EOF'
plan 3
pass "only one"
EOF
isnt "short plan exits non-zero" "$(cat "$TMPD/short.rc")" 0

inner dying <<'EOF'
plan 2
pass "one"
exit 3
EOF
is "explicit exit status is kept" "$(cat "$TMPD/dying.rc")" 3

inner skipall <<'EOF'
skip_all "no widget here"
pass "never"
EOF
is "skip_all output" "$(cat "$TMPD/skipall.out")" "1..0 # SKIP no widget here"
is "skip_all exits 0" "$(cat "$TMPD/skipall.rc")" 0

inner skiplate <<'EOF'
plan 3
pass "one"
skip_all "gone"
EOF
is "skip_all after plan skips the rest" "$(tap skiplate | tr '\n' '|')" \
	"1..3|ok 1 - one|ok 2 # SKIP gone|ok 3 # SKIP gone|"

inner planlast <<'EOF'
pass "a"
pass "b"
done_testing
EOF
is "done_testing prints the plan last" "$(tap planlast | tr '\n' '|')" "ok 1 - a|ok 2 - b|1..2|"
is "done_testing exits 0" "$(cat "$TMPD/planlast.rc")" 0

inner noplan <<'EOF'
pass "a"
EOF
isnt "missing plan exits non-zero" "$(cat "$TMPD/noplan.rc")" 0

export OUTER="$TMPD"
inner tmpd <<'EOF'
plan 1
echo "$TMPD" >"$OUTER/tmpd.path"
at_exit "echo cleanup-ran >'$OUTER/atexit'"
check "TMPD is a directory" test -d "$TMPD"
EOF
is "TMPD test passes" "$(tap tmpd | tr '\n' '|')" "1..1|ok 1 - TMPD is a directory|"
check "TMPD is removed at exit" test ! -e "$(cat "$TMPD/tmpd.path")"
is "at_exit commands run" "$(cat "$TMPD/atexit" 2>/dev/null)" cleanup-ran

inner root <<'EOF'
require_root
plan 1
pass "root"
EOF
if [[ $(id -u) -eq 0 ]]; then
	is "require_root as root" "$(tap root | tr '\n' '|')" "1..1|ok 1 - root|"
else
	like "require_root skips" "$(cat "$TMPD/root.out")" '^1\.\.0 # SKIP needs root'
fi

inner gpu <<'EOF'
require_gpu
plan 1
pass "gpu"
EOF
like "require_gpu passes or skips cleanly" "$(tap gpu | head -n1)" '^1\.\.(1$|0 # SKIP)'
is "require_gpu exits 0" "$(cat "$TMPD/gpu.rc")" 0

cat >"$TMPD/t.json" <<'EOF'
{"traceEvents": [{"cat": "cuda_api", "name": "a"}, {"cat": "gpu", "name": "k"},
 {"cat": "cuda_api", "name": "b"}], "meta": {"tool": "gpubpf"}}
EOF
is "json_query counts" \
	"$(json_query "$TMPD/t.json" 'len([e for e in d["traceEvents"] if e.get("cat")=="cuda_api"])')" 2
is "json_query strings print raw" "$(json_query "$TMPD/t.json" 'd["meta"]["tool"]')" gpubpf
is "json_query has ev" "$(json_query "$TMPD/t.json" '[e["name"] for e in ev]')" '["a", "k", "b"]'

(sleep 0.3; : >"$TMPD/late") &
check "wait_for_file sees a late file" wait_for_file "$TMPD/late" 5
wait
check_fails "wait_for_file times out" wait_for_file "$TMPD/never" 0

is "paths are absolute" "${GPUBPF:0:1}${SIMLIB:0:1}${TESTBIN:0:1}" "///"
