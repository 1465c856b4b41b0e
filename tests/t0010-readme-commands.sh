#!/usr/bin/env bash
# The README's first code block, the two commands a newcomer runs, is
# exactly what tests/fresh-debian.sh (make fresh-test) last ran and passed
# in a fresh Debian 12 minbase chroot (tests/fresh-debian.verified): that
# run takes minutes and downloads packages, so `make test` checks only that
# the README has not changed since.  Also: nothing before the first command
# needs make or sudo, and the CUDA toolkit prerequisite is said first.
. "$(dirname "$0")/lib.sh"
test_description "README's first commands are the ones the fresh Debian chroot test verified"
VERIFIED="$GPUBPF_ROOT/tests/fresh-debian.verified"
README="$GPUBPF_ROOT/README.md"
plan 5

mapfile -t cmds < <(readme_commands "$README")
is "the first code block has two commands" "${#cmds[@]}" 2
like "the first command starts with the dependency script (make is not there yet)" \
	"${cmds[0]:-}" '^bash scripts/install-deps\.sh && '
ok "no command needs sudo (a fresh Debian has none; root runs them as they are)" \
	eval '! printf "%s\n" "${cmds[@]}" | grep -qw sudo'
before=$(awk '/^    [^ ]|^```/ { exit } { print }' "$README")
like "the CUDA toolkit prerequisite is said before the commands" "$before" 'CUDA 13 toolkit'
if [[ ! -f "$VERIFIED" ]]; then
	fail "the commands are the ones tests/fresh-debian.sh verified"
	diag "no ${VERIFIED#"$GPUBPF_ROOT"/}: run make fresh-test"
else
	want=$(grep -v '^#' "$VERIFIED")
	if ! is "the commands are the ones tests/fresh-debian.sh verified" "$(printf '%s\n' "${cmds[@]}")" "$want"; then
		diag "the README's commands changed since the last fresh-Debian run: run make fresh-test (as root)"
	fi
	grep '^# \(date\|took\)' "$VERIFIED" | sed 's/^# /verified: /' | diag
fi
