#!/usr/bin/env bash
# A CUPTI 12 for the tests, beside the CUDA 13 toolkit's: Debian's
# non-free libcupti12 and libcupti-dev (CUDA 12.4), unpacked (not
# installed) into $GPUBPF_CUPTI12 (default /var/lib/gpubpf/cupti12) as
# lib/libcupti.so.12 and include/.  tests/t0406-cupti12.sh decodes records
# laid out by its headers and loads its library into traced jobs; it skips
# where this is absent.
#
#	bash scripts/cupti12.sh     fetch it (idempotent)
#
# apt runs with a state directory of its own under $GPUBPF_CUPTI12, so the
# machine's sources and package database are left as they are.  Needs root
# and Debian's archive; where one is missing it says so in one line and
# exits 0.
set -euo pipefail
DIR=${GPUBPF_CUPTI12:-/var/lib/gpubpf/cupti12}
SUITES=(trixie sid)       # the first whose non-free has libcupti12
STAMP=$DIR/.gpubpf-cupti12

[[ -f "$STAMP" ]] && exit 0
say() { echo "cupti12: $*" >&2; }
[[ $(id -u) -eq 0 ]] || { say "not root; the CUPTI 12 tests will skip"; exit 0; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r $keyring ]] || { say "no $keyring; the CUPTI 12 tests will skip"; exit 0; }
new="$DIR.new"
rm -rf "$new"
mkdir -p "$new/apt/lists/partial" "$new/apt/cache/archives/partial" "$new/debs" "$new/x"
apt_opts=(-q -o "Dir::Etc::SourceList=$new/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
	-o "Dir::State::Lists=$new/apt/lists" -o "Dir::Cache=$new/apt/cache"
	-o Dir::State::status=/dev/null -o APT::Architecture=amd64 -o Debug::NoLocking=1
	-o APT::Sandbox::User=root)
got=
for suite in "${SUITES[@]}"; do
	echo "deb [signed-by=$keyring] http://deb.debian.org/debian $suite non-free" \
		>"$new/apt/sources.list"
	# bounded: a network that hangs must not hang the test suite
	if timeout 300 apt-get "${apt_opts[@]}" update >"$new/apt.log" 2>&1 &&
		(cd "$new/debs" && timeout 600 apt-get "${apt_opts[@]}" download libcupti12 \
			libcupti-dev >>"$new/apt.log" 2>&1); then
		got=$suite
		break
	fi
	rm -f "$new"/debs/*
done
if [[ -z $got ]]; then
	tail -n 2 "$new/apt.log" >&2
	rm -rf "$new"
	say "no libcupti12 from Debian's archive now (log above); the CUPTI 12 tests will skip"
	exit 0
fi
for deb in "$new"/debs/*.deb; do
	dpkg-deb -x "$deb" "$new/x"
done
so=$(ls "$new"/x/usr/lib/x86_64-linux-gnu/libcupti.so.12 2>/dev/null || true)
if [[ -z $so || ! -r "$new/x/usr/include/cupti_activity.h" ]]; then
	rm -rf "$new"
	say "Debian's libcupti12 ($got) has no libcupti.so.12 or cupti_activity.h where expected; the CUPTI 12 tests will skip"
	exit 0
fi
mkdir -p "$new/lib" "$new/include"
cp -L "$so" "$new/lib/libcupti.so.12"
cp -r "$new"/x/usr/include/. "$new/include/"
(cd "$new/debs" && ls) >"$new/PACKAGES"
rm -rf "$new/x" "$new/debs" "$new/apt" "$new/apt.log"
echo "$got" >"$new/.gpubpf-cupti12"
rm -rf "$DIR"
mv "$new" "$DIR"
say "CUPTI 12 from Debian $got in $DIR"
