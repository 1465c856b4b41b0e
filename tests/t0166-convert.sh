#!/usr/bin/env bash
# gpubpf convert IN OUT: a JSON or .pftrace trace read back into the model
# and written in the format OUT names gives the very files record writes
# from the model itself, and past --memory the same events and arrows,
# written in parts; report reads a .pftrace as its JSON; bad input is one
# line and no output.
. "$(dirname "$0")/lib.sh"
test_description "convert: .json/.pftrace -> .pftrace/.json.gz/.json exactly as record writes them; bad input"
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
check "convert .pftrace -> .json" "$GPUBPF" convert "$TMPD/a.pftrace" "$TMPD/d.json"
check "record's .json, byte for byte" cmp "$TMPD/a.json" "$TMPD/d.json"
"$GPUBPF" report "$TMPD/a.json" 2>&1 | tail -n +2 >"$TMPD/r.json.txt"
"$GPUBPF" report "$TMPD/a.pftrace" 2>&1 | tail -n +2 >"$TMPD/r.pf.txt"
ok "report reads the .pftrace as the .json (all but the line naming the file)" \
	test -s "$TMPD/r.pf.txt" -a "$(cat "$TMPD/r.json.txt")" = "$(cat "$TMPD/r.pf.txt")"

# several processes (a forked and an exec'd child): their threads' names
# come back in the same order, whatever order the .pftrace keeps them in
check "record a job with children to .json and .pftrace" "$GPUBPF" record -q \
	-o "$TMPD/f.json" -o "$TMPD/f.pftrace" -- "$PY" "$GPUBPF_ROOT/sim/train.py" --steps 3 \
	--fork-child
check "convert its .pftrace -> .json" "$GPUBPF" convert "$TMPD/f.pftrace" "$TMPD/f2.json"
check "record's .json of several processes, byte for byte" cmp "$TMPD/f.json" "$TMPD/f2.json"

# a trace of other origin: launches named (no handle) where their kernels'
# GPU names differ; each launch keeps its own name, through every format
cat >"$TMPD/kn.json" <<'JSON'
{"gpubpf":{"version":"0.1.0","clock":"CLOCK_MONOTONIC","realtime_offset_ns":0,"ts_base_ns":1000000000,"host":"h"},"traceEvents":[
{"ph":"X","cat":"cuda_api","name":"cuLaunchKernel","pid":100,"tid":100,"ts":1000.0,"dur":5.0,"args":{"kernel":"gemm","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x0","correlation":1}},
{"ph":"X","cat":"cuda_api","name":"cuLaunchKernel","pid":100,"tid":100,"ts":1010.0,"dur":5.0,"args":{"kernel":"softmax","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x0","correlation":2}},
{"ph":"X","cat":"kernel","name":"gemm_f32","pid":100,"tid":1073741825,"ts":1020.0,"dur":10.0,"args":{"device":0,"stream":1,"correlation":1}},
{"ph":"X","cat":"kernel","name":"softmax_kernel<float, 128>","pid":100,"tid":1073741825,"ts":1040.0,"dur":10.0,"args":{"device":0,"stream":1,"correlation":2}}
]}
JSON
launch_names() { json_query "$1" '" ".join(e["args"]["kernel"] for e in ev if e.get("cat") == "cuda_api")'; }
check "convert named launches -> .json" "$GPUBPF" convert "$TMPD/kn.json" "$TMPD/kn2.json"
is "each launch keeps its name" "$(launch_names "$TMPD/kn2.json")" "gemm softmax"
check "and -> .pftrace -> .json" sh -c '"$1" convert "$2.json" "$2.pftrace" && "$1" convert "$2.pftrace" "$2.back.json"' \
	sh "$GPUBPF" "$TMPD/kn"
is "each launch keeps its name there too" "$(launch_names "$TMPD/kn.back.json")" "gemm softmax"

# a name longer than the writers' 64 KiB buffers (it crashed the .pftrace reader)
"$PY" - "$TMPD/kn.json" "$TMPD/long.json" <<'PYEOF'
import sys
open(sys.argv[2], "w").write(open(sys.argv[1]).read().replace('"gemm_f32"', '"' + "k" * 70000 + '"'))
PYEOF
check "a 70 KB kernel name: -> .pftrace" "$GPUBPF" convert "$TMPD/long.json" "$TMPD/long.pftrace"
check "and back to .json" "$GPUBPF" convert "$TMPD/long.pftrace" "$TMPD/long2.json"
is "the name whole" "$(json_query "$TMPD/long2.json" \
	'[len(e["name"]) for e in ev if e.get("cat") == "kernel"]')" "[70000, 26]"
check "report --format json of the .pftrace" "$GPUBPF" report --format json "$TMPD/long.pftrace"

# a trace of any size: past --memory, converted in parts as record writes them
mkdir -p "$TMPD/big"
check "record 200 steps whole" "$GPUBPF" record -q --memory 1G -o "$TMPD/big/t.json" -- \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 200 --sync-every 4
for out in p.json p.pftrace; do
	check "convert --memory 1M .json -> $out" \
		"$GPUBPF" convert -v --memory 1M "$TMPD/big/t.json" "$TMPD/big/$out"
	like "in several parts" "$(grep -c "gpubpf: part [0-9]* written out" "$TMPD/.check.out")" \
		'^([3-9]|[1-9][0-9]+)$'
done
tap_from "$PY" "$GPUBPF_ROOT/tests/check_parts.py" "$TMPD/big/t.json" "$TMPD/big/p.json"
check "convert --memory 1M .pftrace -> .json" \
	"$GPUBPF" convert --memory 1M "$TMPD/big/p.pftrace" "$TMPD/big/pp.json"
tap_from "$PY" "$GPUBPF_ROOT/tests/check_parts.py" "$TMPD/big/t.json" "$TMPD/big/pp.json"
perfetto_ok "$TMPD/big/p.pftrace"
is "nothing left beside the outputs" "$(ls -A "$TMPD/big" | sort | tr '\n' ' ')" \
	"p.json p.pftrace pp.json t.json "
out=$TMPD/refused   # expect_error: nothing written here
mkdir -p "$out"
for bad in 0 100K lots; do
	expect_error "convert --memory $bad is refused" 1 "invalid memory size '$bad'" \
		"$GPUBPF" convert --memory "$bad" "$TMPD/a.json" "$out/x.json"
done

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
head -c 3000 "$TMPD/a.pftrace" >"$TMPD/cut.pftrace"
# a Perfetto trace of another tool: one track descriptor (uuid 1, name "x")
printf '\x0a\x08\xe2\x03\x05\x08\x01\x12\x01x' >"$TMPD/foreign.pftrace"
printf '\x0a\x05hello' >"$TMPD/junk.pftrace"
bad "no such file" "gpubpf: $TMPD/none.json: " "$TMPD/none.json" "$TMPD/x.pftrace"
bad "another tool's trace" "not a gpubpf trace" "$TMPD/foreign.json" "$TMPD/x.pftrace"
bad "a truncated trace" "truncated" "$TMPD/cut.json" "$TMPD/x.pftrace"
bad "a truncated .pftrace" "truncated" "$TMPD/cut.pftrace" "$TMPD/x.json"
# cut three quarters in, past several parts (the trace's size varies with
# the machine's speed: a fixed 15 MB once took it whole)
head -c $(($(stat -c %s "$TMPD/big/t.json") * 3 / 4)) "$TMPD/big/t.json" >"$TMPD/big/cut.json"
bad "a trace cut after parts were written" "truncated" --memory 1M "$TMPD/big/cut.json" \
	"$TMPD/big/x.pftrace"
is "nothing left of its parts" "$(ls -A "$TMPD/big" | sort | tr '\n' ' ')" \
	"cut.json p.json p.pftrace pp.json t.json "
# out of time order by more than a part: the parts are cut by time, and
# such an event would be finished apart from the calls and scopes around it
# (it was, silently); whole, the same events convert as the sorted trace
"$PY" - "$TMPD/big/t.json" "$TMPD/big/shuffled.json" <<'PYEOF'
import json, random, sys
d = json.load(open(sys.argv[1]))
meta = [e for e in d["traceEvents"] if e.get("ph") == "M"]
rest = [e for e in d["traceEvents"] if e.get("ph") != "M"]
random.Random(1).shuffle(rest)
d["traceEvents"] = meta + rest
json.dump(d, open(sys.argv[2], "w"))
PYEOF
bad "events out of order beyond --memory" \
	"shuffled.json: events out of time order by more than --memory holds \(one at [0-9.]+ us comes after those before [0-9.]+ us were written out\): convert it with a larger --memory$" \
	--memory 1M "$TMPD/big/shuffled.json" "$TMPD/big/x.json"
check "... whole, it converts" "$GPUBPF" convert "$TMPD/big/shuffled.json" "$TMPD/big/s.json"
is "... to the same events as the sorted trace" \
	"$(json_query "$TMPD/big/s.json" 'len(ev)'):$(json_query "$TMPD/big/s.json" 'sorted((e.get("ts", 0), e["name"]) for e in ev if e.get("cat") == "cuda_api") == sorted((e.get("ts", 0), e["name"]) for e in json.load(open("'"$TMPD/big/t.json"'"))["traceEvents"] if e.get("cat") == "cuda_api")')" \
	"$(json_query "$TMPD/big/t.json" 'len(ev)'):true"
rm -f "$TMPD/big/shuffled.json" "$TMPD/big/s.json"
# an output that is a loop of symbolic links: open()'s error, the links kept
ln -s loop2.json "$TMPD/loop1.json"
ln -s loop1.json "$TMPD/loop2.json"
bad "an output path in a loop of links" "cannot write '$TMPD/loop1.json': Too many levels of symbolic links$" \
	"$TMPD/a.json" "$TMPD/loop1.json"
is "... which stays a link" "$(readlink "$TMPD/loop1.json")" loop2.json
rm -f "$TMPD/loop1.json" "$TMPD/loop2.json"
bad "another tool's Perfetto trace" "not a gpubpf trace .a Perfetto trace without gpubpf's metadata.$" \
	"$TMPD/foreign.pftrace" "$TMPD/x.json"
bad "bytes that are no Perfetto trace" "not a Perfetto trace" "$TMPD/junk.pftrace" "$TMPD/x.json"
bad "an unknown output format" "unsupported output format" "$TMPD/a.json" "$TMPD/x.txt"
bad "an unwritable output" "/nonexistent-dir" "$TMPD/a.json" /nonexistent-dir/x.pftrace
cp "$TMPD/a.json" "$TMPD/same.json"
bad "the input as the output" "'$TMPD/same.json' is both the trace read and the output" \
	"$TMPD/same.json" "$TMPD/same.json"
check "which is left as it was" cmp "$TMPD/a.json" "$TMPD/same.json"
ok "no output was left behind" test ! -e "$TMPD/x.pftrace" -a ! -e "$TMPD/x.json"
out=$TMPD/usage     # expect_error: nothing written here
mkdir -p "$out"
expect_error "one argument is a usage error" 1 "convert needs a trace and an output file" \
	"$GPUBPF" convert "$TMPD/a.json"
expect_error "an unknown option" 1 "unknown option '--bogus'" \
	"$GPUBPF" convert --bogus "$TMPD/a.json" "$out/x.json"
expect_error "--memory without its value" 1 "missing value for '--memory'" \
	"$GPUBPF" convert "$TMPD/a.json" "$out/x.json" --memory
done_testing
