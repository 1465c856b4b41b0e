#!/usr/bin/env bash
# A CPython newer than Debian 12's, for the Python-stack tests: Debian
# unstable's python3.14 and its headers in a minimal chroot (debootstrap
# --variant=minbase), at $GPUBPF_SID (default /var/lib/gpubpf/sid).
# tests/sid-python3.14 runs it; the tests that walk Python stacks add it to
# the CPythons they cover (tests/unit/test_pyruntime.c also checks the
# offsets gpubpf reads against its headers), and skip it where it is absent.
#
#	bash scripts/sid-python.sh     create it if it is missing (idempotent)
#
# Needs root, debootstrap and Debian's archive; where either is missing it
# says so in one line and exits 0: the tests then skip CPython 3.14.
set -euo pipefail
SID=${GPUBPF_SID:-/var/lib/gpubpf/sid}
PY=python3.14

[[ -x "$SID/usr/bin/$PY" && -f "$SID/usr/include/$PY/Python.h" ]] && exit 0
say() { echo "sid-python: $*; the tests will skip CPython 3.14" >&2; exit 0; }
[[ $(id -u) -eq 0 ]] || say "not root"
command -v debootstrap >/dev/null || say "no debootstrap"
tmp="$SID.new"
rm -rf "$tmp"
mkdir -p "$(dirname "$SID")"
echo "sid-python: installing Debian unstable's $PY in $SID (a minute; downloads ~80 MB)" >&2
if ! debootstrap --variant=minbase --include="$PY-minimal,lib$PY-stdlib,lib$PY-dev" sid "$tmp" \
	http://deb.debian.org/debian >"$tmp.log" 2>&1; then
	tail -n 3 "$tmp.log" >&2
	rm -rf "$tmp" "$tmp.log"
	say "debootstrap failed (log above)"
fi
rm -f "$tmp.log"
chroot "$tmp" "$PY" -c 'pass' || { rm -rf "$tmp"; say "the chroot's $PY does not run"; }
rm -rf "$SID"
mv "$tmp" "$SID"
