#!/usr/bin/env bash
# test-timeout: 3600
# The README's first two commands, as a newcomer meets them: read from
# README.md and run as written, as root, in a fresh Debian 12
# (debootstrap --variant=minbase bookworm: no compiler, no make, no sudo,
# no python) with the CUDA toolkit bind-mounted at /usr/local/cuda.
#
#	bash tests/fresh-debian.sh        (make fresh-test)
#
# The debootstrapped system is kept in $GPUBPF_FRESH_CACHE (default
# /var/cache/gpubpf-fresh/bookworm-minbase) and reused; every run starts
# from a clean overlay of it, so nothing a run installs is seen by the
# next.  Downloaded packages are kept in $GPUBPF_FRESH_CACHE/apt-archives
# (only the .deb files: every run still installs them).  The fresh system
# shares this machine's kernel: /proc, /sys (with debugfs, tracefs and the
# BPF filesystem), /dev, a private /run and /tmp are mounted in it, inside a
# mount namespace of its own where it is the root (pivot_root), so that
# every mount goes away with the run.
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# CUDA_HOME (default /usr/local/cuda).
#
# Skips, saying why, without root, debootstrap, the toolkit, mount
# namespaces or a reachable archive.  When both commands pass it writes
# them, with the date and durations, to tests/fresh-debian.verified, which
# tests/t0010-readme-commands.sh compares with the README in `make test`.
# The commands' output is in build/test-logs/fresh-debian.cmd{1,2}.log.
. "$(dirname "$0")/lib.sh"
test_description "README's first commands, verbatim, as root in a fresh Debian 12 minbase chroot"
require_root
require_cmd debootstrap unshare pivot_root mount stat git tar
CUDA=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
[[ -f "$CUDA/include/cuda.h" && -f "$CUDA/include/cupti.h" ]] ||
	skip_all "no CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda} (cuda.h, cupti.h)"
unshare --mount --propagation private true 2>/dev/null ||
	skip_all "cannot create a mount namespace here"

CACHE=${GPUBPF_FRESH_CACHE:-/var/cache/gpubpf-fresh}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE="$CACHE/bookworm-minbase"
RUN="$CACHE/run"
LOGS="$GPUBPF_ROOT/build/test-logs"
VERIFIED="$GPUBPF_ROOT/tests/fresh-debian.verified"
mkdir -p "$CACHE/apt-archives/partial" "$LOGS"

mapfile -t CMDS < <(readme_commands)
plan 6
t0=$(date +%s)

# 1. the README's first block: the two commands
is "README's first code block has two commands" "${#CMDS[@]}" 2 ||
	bail_out "the README's first code block is not the two commands to run"
diag "command 1: ${CMDS[0]}"
diag "command 2: ${CMDS[1]}"

# 2. the base system, debootstrapped once
if [[ ! -x "$BASE/bin/bash" ]]; then
	rm -rf "$BASE.tmp"
	ts=$(date +%s)
	if ! debootstrap --variant=minbase bookworm "$BASE.tmp" "$MIRROR" >"$LOGS/fresh-debian.debootstrap.log" 2>&1; then
		skip_all "debootstrap could not run: $(tail -n 1 "$LOGS/fresh-debian.debootstrap.log")"
	fi
	mv "$BASE.tmp" "$BASE"
	diag "debootstrap --variant=minbase bookworm took $(($(date +%s) - ts)) s (kept in $BASE)"
fi

# 3. a clean overlay of it, with this working tree (tracked and untracked,
# not ignored: what a checkout or a copy of it would hold) in /root/gpubpf
# and, as in Debian's container images, no service started by a package
kill_chroot() { # every process left whose root is the fresh system
	local p dev
	dev=$(cat "$RUN/rootdev" 2>/dev/null) || return 0
	for p in /proc/[0-9]*; do
		[[ "$(stat -L -c %d "$p/root/" 2>/dev/null)" == "$dev" ]] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	return 0
}
kill_chroot
rm -rf "$RUN"
mkdir -p "$RUN/upper" "$RUN/work" "$RUN/root" "$RUN/out"
at_exit kill_chroot

# The fresh system's side, run in a mount namespace of its own: mount it,
# make it the root, run the command string $1 there as root.
cat >"$RUN/inside.sh" <<'EOF'
set -u
R=$RUN/root
mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$RUN/upper,workdir=$RUN/work" "$R" || exit 90
mount -t proc proc "$R/proc" &&
	mount --rbind /sys "$R/sys" && mount --make-rslave "$R/sys" &&
	mount --rbind /dev "$R/dev" && mount --make-rslave "$R/dev" &&
	mount -t tmpfs tmpfs "$R/run" &&
	mount -t tmpfs tmpfs "$R/tmp" || exit 91
mountpoint -q "$R/sys/kernel/debug" || mount -t debugfs debugfs "$R/sys/kernel/debug" 2>/dev/null
mountpoint -q "$R/sys/kernel/tracing" || mount -t tracefs tracefs "$R/sys/kernel/tracing" 2>/dev/null
mountpoint -q "$R/sys/fs/bpf" || mount -t bpf bpf "$R/sys/fs/bpf" 2>/dev/null
mkdir -p "$R/usr/local/cuda" &&
	mount --bind "$CUDA" "$R/usr/local/cuda" &&
	mount -o remount,bind,ro "$R/usr/local/cuda" &&
	mount --bind "$CACHE/apt-archives" "$R/var/cache/apt/archives" || exit 92
stat -c %d "$R" >"$RUN/rootdev"
# the fresh system becomes this namespace's root (pivot_root, not chroot:
# a path a process reads in /proc/PID/maps is then one under /proc/PID/root,
# as on a real machine, also across the mount namespaces the tests create)
mkdir -p "$R/.oldroot" && cd "$R" && pivot_root . .oldroot &&
	umount -l /.oldroot && rmdir /.oldroot || exit 93
cd /
exec env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/bash -c "$1"
EOF
in_chroot() { # CMDSTRING: run it in the chroot (as root, from /root/gpubpf)
	RUN="$RUN" BASE="$BASE" CUDA="$CUDA" CACHE="$CACHE" \
		unshare --mount --propagation private bash "$RUN/inside.sh" "$1" </dev/null
}
prep_ok=1
cp /etc/resolv.conf "$RUN/upper/resolv.conf.host" 2>/dev/null
mkdir -p "$RUN/upper/etc" "$RUN/upper/usr/sbin" "$RUN/upper/root/gpubpf" &&
	chmod 700 "$RUN/upper/root" || prep_ok=0
mv "$RUN/upper/resolv.conf.host" "$RUN/upper/etc/resolv.conf" 2>/dev/null
printf '#!/bin/sh\nexit 101\n' >"$RUN/upper/usr/sbin/policy-rc.d" && chmod 755 "$RUN/upper/usr/sbin/policy-rc.d" || prep_ok=0
(cd "$GPUBPF_ROOT" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | tar -xf - -C "$RUN/upper/root/gpubpf" || prep_ok=0
# inside, t0010-readme-commands.sh compares the README with the commands
# this run is verifying
{
	echo "# being verified by tests/fresh-debian.sh"
	printf '%s\n' "${CMDS[@]}"
} >"$RUN/upper/root/gpubpf/tests/fresh-debian.verified" || prep_ok=0
probe=$(in_chroot 'cd /root/gpubpf && for c in make cc gcc clang python3 sudo; do command -v $c; done; echo probed' 2>&1)
if ((prep_ok)) && [[ "$probe" == probed ]]; then
	pass "fresh minbase chroot with the working tree: no make, cc, gcc, clang, python3 or sudo in it"
else
	fail "fresh minbase chroot with the working tree: no make, cc, gcc, clang, python3 or sudo in it"
	diag "$probe"
	bail_out "cannot prepare the chroot"
fi

# 4-7. the two commands, as written, one after the other
declare -a DUR RC
for i in 0 1; do
	ts=$(date +%s)
	RC[i]=0
	in_chroot "cd /root/gpubpf && ${CMDS[i]}" >"$LOGS/fresh-debian.cmd$((i + 1)).log" 2>&1 || RC[i]=$?
	DUR[i]=$(($(date +%s) - ts))
	diag "command $((i + 1)) took ${DUR[i]} s, exit status ${RC[i]}"
done

log1="$LOGS/fresh-debian.cmd1.log" log2="$LOGS/fresh-debian.cmd2.log"
if ! is "command 1 exits 0" "${RC[0]}" 0; then
	tail -n 20 "$log1" | diag
fi
trace=$(sed -n 's/^demo: the timeline is //p' "$log1" | tail -n 1)
if [[ -n "$trace" && -s "$RUN/upper$trace" ]]; then
	pass "command 1 wrote the demo's trace ($trace, $(stat -c %s "$RUN/upper$trace") bytes)"
else
	fail "command 1 wrote the demo's trace"
	diag "'the timeline is' line: '${trace:-none}'"
fi
if ! is "command 2 exits 0" "${RC[1]}" 0; then
	grep -E '^(FAIL|    )' "$log2" | head -n 40 | diag
fi
# the suite's last line (make adds its own error line after it on failure)
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log2" | tail -n 1)
like "command 2 says 'N passed, 0 failed, K skipped'" "$summary" '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' ||
	tail -n 20 "$log2" | diag
grep -E '^SKIP ' "$log2" | diag

total=$(($(date +%s) - t0))
diag "whole run: ${total} s (command 1 ${DUR[0]} s, command 2 ${DUR[1]} s); last line: $summary"
if ((RC[0] == 0 && RC[1] == 0)) && [[ "$summary" =~ ^[0-9]+\ passed,\ 0\ failed ]] && [[ -n "$trace" ]]; then
	{
		echo "# The README's first commands as tests/fresh-debian.sh last ran them, as root,"
		echo "# in a fresh Debian 12 minbase chroot, and they passed (checked against"
		echo "# README.md by tests/t0010-readme-commands.sh; rerun: make fresh-test)."
		echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); CUDA toolkit $(basename "$CUDA")"
		echo "# took ${total} s: command 1 ${DUR[0]} s, command 2 ${DUR[1]} s; command 2 said: $summary"
		printf '%s\n' "${CMDS[@]}"
	} >"$VERIFIED"
	diag "recorded in ${VERIFIED#"$GPUBPF_ROOT"/}"
fi
