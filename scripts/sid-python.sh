#!/usr/bin/env bash
# CPythons newer than Debian 12's, for the Python-stack tests: Debian
# unstable's python3.14 and python3.15, with their headers, in a minimal
# chroot (debootstrap --variant=minbase) at $GPUBPF_SID (default
# /var/lib/gpubpf/sid).  tests/sid-python3.X runs one; the tests that walk
# Python stacks add them to the CPythons they cover (tests/unit/
# test_pyruntime.c also checks the offsets gpubpf reads against their
# headers), and skip a version that is absent.
#
#	bash scripts/sid-python.sh     make or complete it (idempotent)
#
# Needs root, debootstrap and Debian's archive; where one is missing, or
# unstable no longer has a version, it says so in one line and exits 0:
# the tests then skip that version.
set -euo pipefail
SID=${GPUBPF_SID:-/var/lib/gpubpf/sid}
VERSIONS=(3.14 3.15)
STAMP=$SID/.gpubpf-sid-python   # the versions asked for, once all are in

[[ -f "$STAMP" && "$(head -n 1 "$STAMP")" == "${VERSIONS[*]}" ]] && exit 0
say() { echo "sid-python: $*" >&2; }
[[ $(id -u) -eq 0 ]] || { say "not root; the tests will skip CPython ${VERSIONS[*]}"; exit 0; }
command -v debootstrap >/dev/null ||
	{ say "no debootstrap; the tests will skip CPython ${VERSIONS[*]}"; exit 0; }
root=$SID
if [[ ! -x "$SID/usr/bin/apt-get" ]]; then
	root="$SID.new"
	rm -rf "$root"
	mkdir -p "$(dirname "$SID")"
	say "making a Debian unstable chroot in $SID for CPython ${VERSIONS[*]} (a minute or two; ~150 MB of downloads)"
	# bounded: a network that hangs must not hang the test suite
	if ! timeout 900 debootstrap --variant=minbase sid "$root" http://deb.debian.org/debian \
		>"$root.log" 2>&1; then
		tail -n 3 "$root.log" >&2
		rm -rf "$root" "$root.log"
		say "debootstrap failed (log above); the tests will skip CPython ${VERSIONS[*]}"
		exit 0
	fi
	rm -f "$root.log"
else
	timeout 300 chroot "$root" apt-get -q update >/dev/null 2>&1 || true
fi
have=()
for v in "${VERSIONS[@]}"; do
	if timeout 600 chroot "$root" apt-get install -y -q --no-install-recommends "python$v-minimal" \
		"libpython$v-stdlib" "libpython$v-dev" >"$root.apt.log" 2>&1 &&
		chroot "$root" "python$v" -c 'import ctypes'; then
		have+=("$v")
	else
		tail -n 2 "$root.apt.log" >&2
		say "no CPython $v from Debian unstable now; the tests will skip it"
	fi
done
rm -f "$root.apt.log"
# done only when every version is in; else the next run tries the missing again
[[ "${have[*]}" == "${VERSIONS[*]}" ]] && echo "${VERSIONS[*]}" >"$root/.gpubpf-sid-python"
[[ "$root" == "$SID" ]] || mv "$root" "$SID"
