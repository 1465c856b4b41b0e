#!/usr/bin/env bash
# Bad input to record: one clear line on stderr, a non-zero exit status,
# and never an output file.  So for a recorder in a container's PID
# namespace.
. "$(dirname "$0")/lib.sh"
test_description "record: bad input is refused clearly"
require_bpf
require_sim
out="$TMPD/out"
mkdir "$out"

o=(-o "$out/t.json")
expect_error "duration 0" 1 "invalid duration '0'" "$GPUBPF" record -p $$ -d 0 "${o[@]}"
expect_error "duration -1s" 1 "invalid duration '-1s'" "$GPUBPF" record -p $$ -d -1s "${o[@]}"
expect_error "duration abc" 1 "invalid duration 'abc'" "$GPUBPF" record -p $$ -d abc "${o[@]}"
expect_error "pid that does not exist" 1 "no such process: 4000000" "$GPUBPF" record -p 4000000 "${o[@]}"
if [ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ]; then
	expect_error "a kernel thread's pid" 1 "pid 2 is a kernel thread \\(kthreadd\\), not a CUDA program" \
		"$GPUBPF" record -p 2 "${o[@]}"
else
	skip "a kernel thread's pid: pid 2 is not kthreadd here (a pid namespace)" 4
fi
expect_error "pid list junk" 1 "invalid pid list '12,x'" "$GPUBPF" record -p 12,x "${o[@]}"
expect_error "no target" 1 "exactly one of -p PID, -a or -- CMD" "$GPUBPF" record "${o[@]}"
expect_error "two targets" 1 "exactly one of -p PID, -a or -- CMD" "$GPUBPF" record -a -p $$ "${o[@]}"
expect_error "unwritable output directory" 1 "cannot write '$out/none/t.json'" \
	"$GPUBPF" record -p $$ -o "$out/none/t.json"
expect_error "unknown output format" 1 "unsupported output format" "$GPUBPF" record -p $$ -o "$out/t.txt"
expect_error "unreadable libcuda" 1 "cannot read libcuda '/nonexistent/libcuda.so.1'" \
	"$GPUBPF" record --libcuda /nonexistent/libcuda.so.1 -p $$ "${o[@]}"
echo "not a library" >"$TMPD/fake.so"
expect_error "libcuda that is not ELF" 1 "is not an ELF file" \
	"$GPUBPF" record --libcuda "$TMPD/fake.so" -a -d 1s "${o[@]}"
expect_error "libcuda without CUDA entry points" 1 "defines no CUDA driver entry point" \
	"$GPUBPF" record --libcuda /bin/true -a -d 1s "${o[@]}"
# a FIFO as libcuda: refused, not waited on for a writer (record and list hung)
mkfifo "$TMPD/fifo.so"
expect_error "a FIFO as libcuda" 1 "^gpubpf: libcuda '$TMPD/fifo.so' is not an ELF file$" \
	timeout 20 "$GPUBPF" record --libcuda "$TMPD/fifo.so" -p $$ "${o[@]}"
expect_error "list -v of a FIFO" 1 "^gpubpf: '$TMPD/fifo.so' is not an ELF file$" \
	timeout 20 "$GPUBPF" list -v --libcuda "$TMPD/fifo.so"
# --cupti-lib that is not the injection library: refused before the command
# runs (it was set in its CUDA_INJECTION64_PATH, and the driver said so on
# the command's stderr)
for lib in "$TMPD/fake.so" "$SIMLIB/libcuda.so.1" "$TMPD"; do
	expect_error "--cupti-lib ${lib##*/}" 1 \
		"^gpubpf: --cupti-lib '$lib' is not gpubpf's injection library \(no gpubpf_late_attach in it\)$" \
		"$GPUBPF" record --cupti-lib "$lib" "${o[@]}" -- sh -c 'echo RAN >&2'
done
# the default output (no -o) where it cannot be written: refused before the
# command runs (it ran, and its trace was lost at the end)
mkdir "$TMPD/ro"
chmod 555 "$TMPD/ro"
rc=0
(cd "$TMPD/ro" && setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search \
	"$GPUBPF" record -- sh -c 'echo RAN >&2') 2>"$TMPD/ro.err" || rc=$?
if grep -q "needs CAP_BPF" "$TMPD/ro.err"; then
	skip "no root without CAP_DAC_OVERRIDE here" 2
else
	is "an unwritable default output: exit 1" "$rc" 1
	like "... said, before the command ran" "$(cat "$TMPD/ro.err")" \
		"^gpubpf: cannot write 'gpubpf-[0-9]+-[0-9-]+\.json': Permission denied \(the default output, in the current directory: give -o PATH\)$"
fi
# a name too long for the file system: refused first; one just short
# enough is written (its temporary name was too long for it)
long=$(printf 'b%.0s' {1..256})
expect_error "an output name of 261 bytes" 1 "File name too long" \
	"$GPUBPF" record -o "$out/$long.json" -- true
long=$(printf 'b%.0s' {1..250})
check "an output name of 255 bytes" "$GPUBPF" record -q -o "$TMPD/$long.json" -- true
ok "... is written" test -s "$TMPD/$long.json"
sleep 30 &
sleeper=$!
at_exit "kill $sleeper 2>/dev/null"
rc=0
LD_LIBRARY_PATH="$SIMLIB" "$GPUBPF" record -p "$sleeper" -d 1s "${o[@]}" 2>"$TMPD/stderr" || rc=$?
is "a process without CUDA: exit status" "$rc" 1
like "a process without CUDA: waits, then says so" "$(tail -n 1 "$TMPD/stderr")" \
	"^gpubpf: pid $sleeper never loaded libcuda \(is it a CUDA program\?\)$"
is "a process without CUDA: no output file" "$(ls -A "$out")" ""
expect_error "not root" 2 "needs root.*sudo" \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$GPUBPF" record -p $$ -o /tmp/never.json
ok "not root: no file at /tmp/never.json" test ! -e /tmp/never.json
# in a container's PID namespace (no --pid=host) its pids are not the ones
# the BPF programs see: it recorded nothing, exit 0, before
expect_error "in a PID namespace of its own" 2 \
	"^gpubpf: recording must run in the host's PID namespace, and it runs in a PID namespace of its own.*--pid=host" \
	unshare -p -f --mount-proc "$GPUBPF" record "${o[@]}" -- true
# so with a /proc mounted from another PID namespace (one made here, its
# /proc mounted at $TMPD/proc, then over /proc in a mount namespace)
mkdir "$TMPD/proc"
unshare -p -f --kill-child sh -c "mount -t proc proc '$TMPD/proc' && exec sleep 60" &
pns=$!
at_exit "kill $pns 2>/dev/null; umount '$TMPD/proc' 2>/dev/null"
wait_for_cmd 10 test -e "$TMPD/proc/1/status"
expect_error "a /proc of another PID namespace" 2 \
	"/proc is mounted from another PID namespace \(/proc/self is missing" \
	unshare -m sh -c "mount --bind '$TMPD/proc' /proc && exec \"\$0\" record -d 1s -o '$out/t.json' -a" \
	"$GPUBPF"
kill "$pns"
wait "$pns" 2>/dev/null
umount "$TMPD/proc"

# a command that cannot be run, and the command's own exit status
expect_error "command not found" 127 "cannot run 'gpubpf-no-such-command'" \
	"$GPUBPF" record "${o[@]}" -- gpubpf-no-such-command
printf 'echo hi\n' >"$TMPD/noexec.sh"
chmod 644 "$TMPD/noexec.sh"
expect_error "a command found but not executable" 126 \
	"cannot run '$TMPD/noexec.sh': Permission denied" "$GPUBPF" record "${o[@]}" -- "$TMPD/noexec.sh"
expect_error "a directory as the command" 126 "cannot run '$TMPD': Permission denied" \
	"$GPUBPF" record "${o[@]}" -- "$TMPD"
rc=0
"$GPUBPF" record --libcuda "$SIMLIB/libcuda.so.1" -o "$TMPD/s.json" -- sh -c 'exit 7' 2>/dev/null || rc=$?
is "record exits with the command's status" "$rc" 7
rc=0
"$GPUBPF" record --libcuda "$SIMLIB/libcuda.so.1" -o "$TMPD/k.json" -- sh -c 'kill -KILL $$' 2>/dev/null || rc=$?
is "a command killed by a signal: 128 + signal" "$rc" 137
ok "a trace is written even so" test -s "$TMPD/k.json"

# help and unknown commands
check "gpubpf --help" "$GPUBPF" --help
check "gpubpf record --help" "$GPUBPF" record --help
check "gpubpf list --help" "$GPUBPF" list --help
like "record --help documents -p, -a, -d, -o, --libcuda" "$("$GPUBPF" record --help)" \
	"--pid.*--all.*--duration.*--output.*--libcuda"
expect_error "unknown command" 1 "unknown command 'recrod'" "$GPUBPF" recrod
expect_error "unknown option" 1 "unknown option '--bogus' \\(see 'gpubpf record --help'\\)" "$GPUBPF" record --bogus
expect_error "missing value" 1 "missing value for '-d'" "$GPUBPF" record -p $$ -d
done_testing
