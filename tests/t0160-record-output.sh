#!/usr/bin/env bash
# Trace files: .json and .json.gz by extension, the default name, the
# owner under sudo, and nothing at the final path until it is complete.
. "$(dirname "$0")/lib.sh"
test_description "record: output files"
require_bpf
require_sim
export LD_LIBRARY_PATH="$SIMLIB"
work=("$PY" "$GPUBPF_ROOT/sim/train.py" --steps 2 --no-thread)

check "gzip output" "$GPUBPF" record -o "$TMPD/t.json.gz" -- "${work[@]}"
is "it is gzip" "$(head -c 2 "$TMPD/t.json.gz" | od -An -tx1 | tr -d ' ')" "1f8b"
gunzip -c "$TMPD/t.json.gz" >"$TMPD/t.json"
cmp_ok "and holds the calls" "$(json_query "$TMPD/t.json" \
	'len([e for e in ev if e.get("cat") == "cuda_api"])')" -gt 50
is "trace metadata: clock" "$(json_query "$TMPD/t.json" 'd["gpubpf"]["clock"]')" CLOCK_MONOTONIC
like "trace metadata: version" "$(json_query "$TMPD/t.json" 'd["gpubpf"]["version"]')" '^[0-9]+\.[0-9]+\.[0-9]+$'
is "trace metadata: host" "$(json_query "$TMPD/t.json" 'd["gpubpf"]["host"]')" "$(hostname)"
off=$(json_query "$TMPD/t.json" 'd["gpubpf"]["realtime_offset_ns"]')
now_off=$("$PY" -c 'import time; print(time.time_ns() - time.monotonic_ns())')
cmp_ok "realtime_offset_ns is CLOCK_REALTIME - CLOCK_MONOTONIC (within 50 ms)" \
	"$(( (off - now_off) < 0 ? now_off - off : off - now_off ))" -lt 50000000
is "ts and dur in microseconds with sub-microsecond fractions" "$(json_query "$TMPD/t.json" \
	'all(isinstance(e["ts"], float) and isinstance(e["dur"], float) for e in ev if e["ph"] == "X")')" true

# default name in the current directory
mkdir "$TMPD/cwd"
(cd "$TMPD/cwd" && "$GPUBPF" record -- "${work[@]}" 2>"$TMPD/def.err")
is "record without -o: exit 0" "$?" 0
name=$(ls "$TMPD/cwd")
like "default name gpubpf-<pid>-<YYYYmmdd-HHMMSS>.json" "$name" '^gpubpf-[0-9]+-[0-9]{8}-[0-9]{6}\.json$'
like "the summary line names it, with its size" "$(tail -n 1 "$TMPD/def.err")" \
	"events, 0 dropped, written to $name \\([0-9.]+ k?B\\)\$"

# under sudo the file belongs to the invoking user
mkdir -m 0777 "$TMPD/sudo"
check "record as root under sudo" env SUDO_UID=65534 SUDO_GID=65534 \
	"$GPUBPF" record -o "$TMPD/sudo/t.json" -- "${work[@]}"
is "the trace belongs to the sudo user" "$(stat -c %u:%g "$TMPD/sudo/t.json")" "65534:65534"
# ids that do not fit a uid_t are no ids: the trace stays root's (it was
# given to the id they wrapped around to)
check "record under a sudo of impossible ids" env SUDO_UID=99999999999 SUDO_GID=4294967296 \
	"$GPUBPF" record -q -o "$TMPD/sudo/big.json" -- true
is "... the trace stays root's" "$(stat -c %u:%g "$TMPD/sudo/big.json")" "0:0"

# killed while recording: nothing at the final path, no temporary left
"$GPUBPF" record -o "$TMPD/killed.json" -- "$PY" "$GPUBPF_ROOT/sim/train.py" --steps 400 2>/dev/null &
g=$!
sleep 1
kill -KILL "$g"
wait "$g" 2>/dev/null
is "SIGKILL mid-recording leaves no file at all" "$(ls -A "$TMPD" | grep -c killed)" 0
pkill -f "train.py --steps 400" || true
# each trace as Perfetto's importer reads it
perfetto_ok "$TMPD/t.json.gz"
done_testing
