#!/usr/bin/env bash
# merge's output always parses (issue #10, item 6): invalid UTF-8 in an
# input's strings (names, keys, args, the "gpubpf" object, the file name)
# becomes U+FFFD, so the output is strict UTF-8 JSON; a "ts" or "dur" that is
# not a finite number of microseconds within +-9e15 (1e400, "abc"), a
# negative "dur", or a "ts" the clock shift would carry out of range, is
# refused with one line, exit 1 and no output, by merge and by report alike
# (a negative absolute "ts" by report and convert).  \u escapes of surrogates become their characters; a trace
# before the reference's clock's zero moves the merged clock on.
. "$(dirname "$0")/lib.sh"
test_description "merge: valid UTF-8 output, out-of-range ts refused"
require_gpubpf
require_cmd "$PY"

GEN="$PY $GPUBPF_ROOT/tests/cluster/gentrace.py"
cd "$TMPD" || bail_out "no temporary directory"

# strict FILE: parse FILE as strict UTF-8 JSON (no NaN/Infinity); print
# "ok" or the error
strict() {
	"$PY" - "$1" <<'PYEOF'
import json, sys
def no_const(c):
    raise ValueError("non-finite number " + c)
try:
    d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "strict"),
                   parse_constant=no_const)
    assert isinstance(d["traceEvents"], list)
    print("ok")
except Exception as e:
    print("invalid: %s" % e)
PYEOF
}

# no_output FILE: neither FILE nor a temporary of it was left behind
no_output() {
	[[ ! -e "$1" && -z $(find . -name ".$1.*") ]]
}

$GEN -o a.json --host node1 --pids 100 --events 50

# every kind of ill-formed UTF-8: a stray continuation byte, 0xff, an
# overlong NUL, an encoded surrogate, a code point past U+10FFFF, a sequence
# cut short by the closing quote; in a name, a key, nested args, the host
printf '{"gpubpf":{"version":"0.1.0","host":"h\xffst","realtime_offset_ns":1700000000000000000},"traceEvents":[
{"ph":"M","name":"process_name","pid":7,"tid":7,"args":{"name":"py\xc0\x80thon"}},
{"ph":"X","cat":"cuda_api","name":"a\x80b","pid":7,"tid":7,"ts":10,"dur":1},
{"ph":"X","cat":"cuda_api","name":"\xed\xa0\x80","pid":7,"tid":7,"ts":11,"dur":1,"args":{"k\xfe":["\xf4\x90\x80\x80",{"x":"\xe2\x82"}]}},
{"ph":"X","cat":"cuda_api","name":"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80","pid":7,"tid":7,"ts":12,"dur":1}
]}' >utf.json
cp utf.json "bad-$(printf '\xff').json"
is "the input is not UTF-8 (python refuses it)" "$(strict utf.json | cut -c1-8)" "invalid:"
check "merge of a trace with invalid UTF-8" "$GPUBPF" merge -q -o m.json a.json utf.json
is "... writes strict UTF-8 JSON" "$(strict m.json)" ok
is "... each ill-formed sequence is one U+FFFD, valid text is kept" \
	"$(json_query m.json '[e["name"] for e in ev if e.get("cat") == "cuda_api" and e["pid"] >= 10**7]')" \
	'["a\ufffdb", "\ufffd\ufffd\ufffd", "caf\u00e9 \u20ac \ud83d\ude00"]'
is "... in keys and nested args too" \
	"$(json_query m.json '[e["args"] for e in ev if e.get("ts") and float(e["ts"]) > 0 and "args" in e and e["pid"] >= 10**7 and e["name"] == "\ufffd\ufffd\ufffd"]')" \
	'[{"k\ufffd": ["\ufffd\ufffd\ufffd\ufffd", {"x": "\ufffd"}]}]'
is "... and in the host name and process name" \
	"$(json_query m.json '[e["args"]["name"] for e in ev if e["name"] == "process_name" and e["pid"] >= 10**7]')" \
	'["h\ufffdst: py\ufffd\ufffdthon"]'
check "an input file name that is not UTF-8" "$GPUBPF" merge -q -o m2.json.gz a.json bad-*.json
zcat m2.json.gz >m2.json
is "... still gives strict UTF-8 JSON" "$(strict m2.json)" ok
check "report reads it" "$GPUBPF" report --format json -o r.json utf.json
is "... and writes strict UTF-8 JSON" "$("$PY" -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8")); print("ok")' r.json 2>&1)" ok

# \u escapes of surrogates: Perfetto refuses them all, a pair's too, so
# the reader writes their characters in UTF-8 (half a pair: U+FFFD); an
# escaped backslash before "ud800" is no escape
printf '{"gpubpf":{"version":"0.1.0","host":"s","realtime_offset_ns":1700000000000000000},"traceEvents":[
{"ph":"X","cat":"cuda_api","name":"p\\ud83d\\ude00q","pid":7,"tid":7,"ts":10,"dur":1},
{"ph":"X","cat":"cuda_api","name":"h\\ud800x","pid":7,"tid":7,"ts":11,"dur":1},
{"ph":"X","cat":"cuda_api","name":"l\\udc00","pid":7,"tid":7,"ts":12,"dur":1,"args":{"k\\udbff":"\\ud800\\u0041"}},
{"ph":"X","cat":"cuda_api","name":"b\\\\ud800 \\u00e9","pid":7,"tid":7,"ts":13,"dur":1}
]}' >surr.json
check "merge of a trace with \\u escapes of surrogates" "$GPUBPF" merge -q -o sm.json surr.json
is "... a pair is its character, half of one U+FFFD, other escapes kept" \
	"$(json_query sm.json '[(e["name"], e.get("args")) for e in ev if e.get("cat") == "cuda_api"]')" \
	'[["p\ud83d\ude00q", null], ["h\ufffdx", null], ["l\ufffd", {"k\ufffd": "\ufffdA"}], ["b\\ud800 \u00e9", null]]'
is "... no surrogate escape is left in the file" "$(grep -ci '[^\\]\\u*d[89ab][0-9a-f][0-9a-f]' sm.json)" 0
if tp=$(trace_processor); then
	is "... Perfetto imports it: its four slices" \
		"$("$tp" -q <(echo "select count(*) as n from slice where name in ('p'||char(128512)||'q', 'h'||char(65533)||'x')") sm.json 2>&1 | tail -n 1)" 2
else
	skip "Perfetto's trace_processor_shell not found (set TRACE_PROCESSOR)"
fi
check "convert writes it the same" "$GPUBPF" convert surr.json sc.json
is "... names as merge's" "$(json_query sc.json '[e["name"] for e in ev if e.get("cat") == "cuda_api"]')" \
	"$(json_query sm.json '[e["name"] for e in ev if e.get("cat") == "cuda_api"]')"

# multi-byte characters across the reader's 1 MiB refills: 3 MiB of U+20AC
# (3 bytes each) and of U+1F600 (4 bytes), then one stray byte
"$PY" - <<'PYEOF'
s = ('\u20ac' * (1 << 20)).encode() + ('\U0001f600' * (1 << 18)).encode() + b'\xff'
open("long.json", "wb").write(b'{"gpubpf":{"version":"0.1.0","host":"l","realtime_offset_ns":1700000000000000000},"traceEvents":[\n{"ph":"X","name":"' + s + b'","pid":1,"tid":1,"ts":1,"dur":1}\n]}\n')
PYEOF
check "merge of a 4 MiB name of 3- and 4-byte characters" "$GPUBPF" merge -q -o long-m.json long.json
is "... keeps every character, only the stray byte becomes U+FFFD" "$("$PY" - <<'PYEOF'
import json
d = json.loads(open("long-m.json", "rb").read().decode("utf-8"))
n = [e["name"] for e in d["traceEvents"] if e.get("ph") == "X"][0]
print(n == "\u20ac" * (1 << 20) + "\U0001f600" * (1 << 18) + "\ufffd")
PYEOF
)" True

# counts and other numbers of the "gpubpf" object beyond any integer (found
# by the fuzzer: converting them was undefined behaviour, caught under t0700)
printf '{"gpubpf":{"version":"0.1.0","host":"n","realtime_offset_ns":5,"events":4.1e34,"dropped_total":1e300,"gpu":{"x":1e300,"y":-1e19}},"traceEvents":[\n{"ph":"X","name":"k","pid":1,"tid":1,"ts":1,"dur":1}\n]}\n' >hugecount.json
check "a \"gpubpf\" object with counts of 1e300 merges" "$GPUBPF" merge -q -o hc.json hugecount.json
is "... the counts ignored, other numbers kept" \
	"$(json_query hc.json '[d["gpubpf"]["events"], d["gpubpf"]["dropped_total"], d["gpubpf"]["merge"]["hosts"][0]["gpu"]]')" \
	'[0, 0, {"x": 1e+300, "y": -1e+19}]'
check "report reads it" "$GPUBPF" report hugecount.json

# ts and dur out of range
mk() { # FILE EVENT-JSON
	printf '{"gpubpf":{"version":"0.1.0","host":"x","realtime_offset_ns":1700000000000000000},"traceEvents":[\n{"ph":"X","name":"ok","pid":1,"tid":1,"ts":5,"dur":1},\n%s\n]}\n' "$2" >"$1"
}
mk inf.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":1e400,"dur":1}'
mk neginf.json '{"ph":"i","name":"k","pid":1,"tid":1,"ts":-1e400}'
mk big.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":9000000000000001,"dur":1}'
mk durinf.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":7,"dur":1e999}'
mk durneg.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":7,"dur":-0.5}'
mk str.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":"abc","dur":1}'
mk null.json '{"ph":"M","name":"k","pid":1,"tid":1,"ts":null}'
refused() { # FILE REGEX
	local rc=0 err
	rm -f out.json
	err=$("$GPUBPF" merge -o out.json a.json "$1" 2>&1) || rc=$?
	if ((rc == 1)) && [[ "$err" =~ $2 ]] && [[ $(wc -l <<<"$err") == 1 ]] && no_output out.json; then
		pass "$1 refused: $err"
	else
		fail "$1 refused with one clear line, exit 1, no output"
		diag "exit status $rc, output: $err"
	fi
}
refused inf.json '^gpubpf: inf\.json: "ts" of the event at line 3 is out of range \(1e400; at most 9e15 us\)$'
refused neginf.json '^gpubpf: neginf\.json: "ts" of the event at line 3 is out of range \(-1e400'
refused big.json '^gpubpf: big\.json: "ts" of the event at line 3 is out of range \(9000000000000001'
refused durinf.json '^gpubpf: durinf\.json: "dur" of the event at line 3 is out of range \(1e999'
refused durneg.json '^gpubpf: durneg\.json: "dur" of the event at line 3 is negative$'
refused str.json '^gpubpf: str\.json: "ts" of the event at line 3 is not a number$'
refused null.json '^gpubpf: null\.json: "ts" of the event at line 3 is not a number$'
mk nots.json '{"ph":"X","name":"k","pid":1,"tid":1,"dur":1}'
mk negts.json '{"ph":"i","name":"k","pid":1,"tid":1,"ts":-7}'
refused nots.json '^gpubpf: nots\.json: the event at line 3 has no "ts"$'
# a negative ts: merge moves it as any other, report and convert refuse it
# (their model counts from the clock's zero; it used to wrap around)
rc=0
err=$("$GPUBPF" report negts.json 2>&1 >/dev/null) || rc=$?
is "report refuses a negative ts" "$rc:$err" \
	'1:gpubpf: negts.json: "ts" of the event at line 3 is negative once ts_base_ns is added'
rc=0
err=$("$GPUBPF" convert negts.json nc.pftrace 2>&1) || rc=$?
is "... convert too, writing nothing" "$rc:$err:$(ls nc.pftrace 2>&1 | grep -c 'No such')" \
	'1:gpubpf: negts.json: "ts" of the event at line 3 is negative once ts_base_ns is added:1'
rc=0
err=$("$GPUBPF" report inf.json 2>&1 >/dev/null) || rc=$?
like "report refuses 1e400 too" "$rc:$err" '^1:gpubpf: inf\.json: "ts" of the event at line 3 is out of range'
rc=0
err=$("$GPUBPF" report durneg.json 2>&1 >/dev/null) || rc=$?
is "report refuses a negative dur too" "$rc:$err" \
	'1:gpubpf: durneg.json: "dur" of the event at line 3 is negative'

# in range alone, out of range once moved to the first trace's clock
mk farts.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":2000000000000000,"dur":1}'
sed -i 's/"realtime_offset_ns":1700000000000000000/"realtime_offset_ns":4000000000000000000/' farts.json
refused farts.json '^gpubpf: farts\.json: "ts" of the event at line 3 is out of range once moved to node1.s clock'
printf '{"gpubpf":{"version":"0.1.0","host":"y","realtime_offset_ns":-9000000000000000000},"traceEvents":[]}' >faroff.json
refused faroff.json '^gpubpf: faroff\.json: realtime_offset_ns -9000000000000000000 is too far from a\.json.s'
# a trace whose events lie before the reference's clock's zero once moved
# there (one host either side of a reboot, the later first): the merged
# clock moves on by whole seconds, and every event keeps its wall-clock time
mk early.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":7,"dur":1}'
sed -i 's/"realtime_offset_ns":1700000000000000000/"realtime_offset_ns":1699999999500000000/' early.json
rc=0
err=$("$GPUBPF" merge -o re.json a.json early.json 2>&1) || rc=$?
like "a trace before the reference's zero merges, saying how the clock moved" "$rc:$err" \
	"^0:gpubpf: x's trace begins before node1's clock's zero: the merged clock is node1's CLOCK_MONOTONIC \+ 1 s"
is "... every ts >= 0, every event at its own wall-clock time" "$("$PY" - <<'PYEOF'
import json
def walls(path):
    d = json.load(open(path))
    g = d["gpubpf"]
    return g, sorted((e["name"], round(e["ts"] * 1000) + g.get("ts_base_ns", 0) + g["realtime_offset_ns"])
                     for e in d["traceEvents"] if "ts" in e and e.get("ph") != "M")
g, merged = walls("re.json")
want = sorted(walls("a.json")[1] + walls("early.json")[1])
print(min(e["ts"] for e in json.load(open("re.json"))["traceEvents"] if "ts" in e) >= 0,
      merged == want, g["merge"]["clock_added_ns"], g["realtime_offset_ns"])
PYEOF
)" "True True 1000000000 1699999999000000000"
check "... report reads the merged trace" "$GPUBPF" report re.json
check "... and convert to .pftrace and back" "$GPUBPF" convert re.json re.pftrace
check "... report reads that" "$GPUBPF" report re.pftrace
# exponents within range still shift exactly like plain numbers
mk exp.json '{"ph":"X","name":"k","pid":1,"tid":1,"ts":1.5e3,"dur":2E0}'
check "a ts written with an exponent merges" "$GPUBPF" merge -q -o e.json a.json exp.json
is "... shifted like the others" "$(json_query e.json '[e["ts"] for e in ev if e["name"] == "k"]')" '[1500.0]'
done_testing
