#!/usr/bin/env bash
# test-timeout: 240
# scripts/gpubpf-cluster when nodes fail in ways its summary must tell
# apart, with ssh and gpubpf stand-ins on PATH (ssh runs the node's script
# here; the stand-in gpubpf writes a synthetic trace, tests/cluster/
# gentrace.py, or fails as its node's name says): a trace cut short on the
# way or one the merge refuses is left out and its node named, the others
# merged (one such trace sank the whole merge, its node listed "ok"); a
# gpubpf that exits non-zero is a failure; a reused output directory holds
# nothing of the run before (an unreachable node's old trace was merged as
# new); two names of one host, a name with a space, an unwritable output
# directory are refused first; a window under 1 ms is 1 ms, not 0 (every
# node failed); Ctrl-C closes the nodes' connections, merges what finished
# and names the rest (it left them running and wrote no summary).
. "$(dirname "$0")/lib.sh"
test_description "gpubpf-cluster: damaged, refused and failed traces, reused directories, Ctrl-C"
require_gpubpf
require_cmd base64 awk gzip timeout setsid pkill
require_cmd "$PY"

CLUSTER="$GPUBPF_ROOT/scripts/gpubpf-cluster"
FAKE="$TMPD/bin"
mkdir -p "$FAKE"
# ssh -o ... -- NODE CMD: NODE unreachable if listed in $TMPD/down, else CMD here
cat >"$FAKE/ssh" <<SH
#!/bin/sh
while [ "\$1" != "--" ]; do shift; done
node=\$2 cmd=\$3
if grep -qx "\$node" "$TMPD/down" 2>/dev/null; then
	echo "ssh: connect to host \$node port 22: No route to host" >&2
	exit 255
fi
exec sh -c "\$cmd"
SH
# gpubpf record ARGS -d DUR -o OUT: by the node in OUT's name
cat >"$FAKE/gpubpf" <<SH
#!/bin/sh
out= dur=
while [ \$# -gt 0 ]; do
	case "\$1" in -o) out=\$2; shift ;; -d) dur=\$2; shift ;; esac
	shift
done
echo "\$dur" >>"$TMPD/durations"
node=\${out##*-}
node=\${node%.json.gz}
case "\$node" in
fail*) echo "gpubpf: pid 7 never loaded libcuda" >&2; exit 1 ;;
slow*) sleep 60 ;;
esac
"$PY" "$GPUBPF_ROOT/tests/cluster/gentrace.py" -o "\$out" --host "\$node" --events 40 || exit 1
case "\$node" in
trunc*) head -c 300 "\$out" >"\$out.x" && mv "\$out.x" "\$out" ;;
bad*) echo "not a trace" | gzip >"\$out" ;;
esac
exit 0
SH
chmod +x "$FAKE/ssh" "$FAKE/gpubpf"
export PATH="$FAKE:$PATH"
run() { # OUTDIR ARGS...: gpubpf-cluster record, plain ssh, the stand-in gpubpf
	local out=$1
	shift
	rc=0
	timeout 120 "$CLUSTER" record --no-pdsh --lead 0 -d 1s --gpubpf "$FAKE/gpubpf" \
		--local-gpubpf "$GPUBPF" -o "$out" "$@" >"$TMPD/stdout" 2>"$TMPD/stderr" || rc=$?
}
status_of() { # OUTDIR NODE: its line of summary.txt, less the node's name
	sed -n "s/^  $2 *//p" "$1/summary.txt"
}
merged_hosts() {
	json_query "$1/merged.json" '[h["host"] for h in d["gpubpf"]["merge"]["hosts"]]'
}

# 1. every kind of failure beside two good nodes
echo down1 >"$TMPD/down"
run "$TMPD/o1" --hosts a,b,down1,trunc1,bad1,fail1
is "failures beside good nodes: exit 1 (some missing, the rest merged)" "$rc" 1
like "... the summary" "$(head -n 1 "$TMPD/o1/summary.txt")" \
	"^gpubpf-cluster: 2 of 6 nodes recorded, merged into $TMPD/o1/merged.json$"
is "... a and b merged" "$(merged_hosts "$TMPD/o1")" '["a", "b"]'
like "... a: ok" "$(status_of "$TMPD/o1" a)" "^ok +$TMPD/o1/a.json.gz( |$)"
like "... down1: unreachable" "$(status_of "$TMPD/o1" down1)" "^MISSING +unreachable \\(ssh: connect to host down1"
like "... trunc1: its trace damaged" "$(status_of "$TMPD/o1" trunc1)" \
	"^MISSING +its trace arrived damaged \\(.*\\): $TMPD/o1/trunc1.json.gz$"
like "... bad1: its trace refused by the merge" "$(status_of "$TMPD/o1" bad1)" \
	"^MISSING +its trace was refused by the merge \\(.*\\): $TMPD/o1/bad1.json.gz$"
like "... fail1: gpubpf's status" "$(status_of "$TMPD/o1" fail1)" \
	"^MISSING +gpubpf record exited with status 1, no trace: gpubpf: pid 7 never loaded libcuda$"

# 2. the same directory again: nothing of the first run passes for this one's
echo b >"$TMPD/down"
run "$TMPD/o1" --hosts a,b
is "reused directory, b now unreachable: exit 1" "$rc" 1
like "... b: unreachable, not its old trace" "$(status_of "$TMPD/o1" b)" "^MISSING +unreachable"
is "... only a merged" "$(merged_hosts "$TMPD/o1")" '["a"]'
ok "... b's old trace is gone" test ! -e "$TMPD/o1/b.json.gz"
rm -f "$TMPD/down"
run "$TMPD/o1" --hosts bad1
is "reused directory, no trace merges: exit 2" "$rc" 2
is "... said" "$(head -n 1 "$TMPD/o1/summary.txt")" "gpubpf-cluster: no trace could be merged"
ok "... the last run's merged.json is not left" test ! -e "$TMPD/o1/merged.json"

# 3. refused before anything runs: one line, exit 2
refused() { # DESC REGEX ARGS...
	local desc=$1 re=$2
	shift 2
	rm -f "$TMPD/durations"
	run "$TMPD/o3" "$@"
	if ((rc == 2)) && [[ $(wc -l <"$TMPD/stderr") == 1 && "$(cat "$TMPD/stderr")" =~ $re ]] &&
		[[ ! -e "$TMPD/durations" ]]; then
		pass "$desc: refused ($(cat "$TMPD/stderr"))"
	else
		fail "$desc: refused with one line, exit 2, nothing run"
		diag "exit status $rc; stderr: $(cat "$TMPD/stderr")"
	fi
}
refused "two names of one host" "^gpubpf-cluster: nodes 'alice@h1' and 'bob@h1' are one host" \
	--hosts alice@h1,bob@h1,c
refused "a name with a space inside" "^gpubpf-cluster: invalid node name 'my host'" --hosts "my host,b"
if mkdir "$TMPD/ro" && mount -t tmpfs -o size=64k tmpfs "$TMPD/ro" 2>/dev/null; then
	at_exit "umount '$TMPD/ro' 2>/dev/null"
	mkdir -p "$TMPD/ro/out/logs"
	mount -o remount,ro "$TMPD/ro"
	run "$TMPD/ro/out" --hosts a
	is "an unwritable output directory: exit 2, one line" "$rc:$(cat "$TMPD/stderr")" \
		"2:gpubpf-cluster: cannot write in '$TMPD/ro/out'"
else
	skip "cannot mount a tmpfs here"
fi
# spaces around names in a list are no part of them
run "$TMPD/o4" --hosts " a , b"
is "spaces around names: both recorded" "$rc:$(merged_hosts "$TMPD/o4")" '0:["a", "b"]'

# 4. a window under 1 ms is 1 ms on the nodes
rm -f "$TMPD/durations"
timeout 60 "$CLUSTER" record --no-pdsh --lead 0 -d 1ns --gpubpf "$FAKE/gpubpf" \
	--local-gpubpf "$GPUBPF" -o "$TMPD/o5" --hosts a >/dev/null 2>&1
is "-d 1ns: the nodes record 1ms" "$(cat "$TMPD/durations")" 1ms
run "$TMPD/o5" -d 99999999999h --hosts a
like "-d past 24 days: refused" "$rc:$(cat "$TMPD/stderr")" "^2:gpubpf-cluster: invalid duration '99999999999h'"

# 5. Ctrl-C (SIGINT to the process group) while one node still records
setsid timeout 120 "$CLUSTER" record --no-pdsh --lead 0 -d 1s --gpubpf "$FAKE/gpubpf" \
	--local-gpubpf "$GPUBPF" -o "$TMPD/o6" --hosts a,slow1 --timeout 100 \
	>"$TMPD/o6.out" 2>&1 &
c=$!
at_exit "pkill -f '$FAKE/gpubpf' 2>/dev/null; kill $c 2>/dev/null"
wait_for_cmd 30 grep -q '^@@gpubpf-cluster recorded' "$TMPD/o6/logs/a.out"
wait_for_cmd 10 pgrep -f "gpubpf-cluster-.*-slow1"
t0=$(date +%s)
kill -INT -- -"$(ps -o pgid= "$c" | tr -d ' ')"
rc=0
wait "$c" || rc=$?
is "Ctrl-C: exit 1 (one node missing)" "$rc" 1
cmp_ok "... promptly (not after --timeout)" "$(($(date +%s) - t0))" -lt 30
like "... slow1: interrupted" "$(status_of "$TMPD/o6" slow1)" "^MISSING +interrupted \\(Ctrl-C or SIGTERM\\)"
is "... a: fetched and merged" "$(merged_hosts "$TMPD/o6")" '["a"]'
is "... no connection left open" "$(pgrep -fc "timeout -k 5 100 bash -c")" 0
done_testing
