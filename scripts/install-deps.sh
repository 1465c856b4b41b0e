#!/usr/bin/env bash
# Install the Debian packages gpubpf's build and tests need (make included:
# this script is the first thing run on a fresh machine, before make is
# there).  Idempotent: when everything is present it only queries dpkg.
#
#	bash scripts/install-deps.sh            install what is missing
#	bash scripts/install-deps.sh --check    only say what is missing
#
# Installing needs root: run it as root, or as a user who may sudo (it runs
# apt-get through sudo then).  --check exits 1 when a package is missing.
# Both check that the CUDA toolkit's headers are under $CUDA_HOME
# (default /usr/local/cuda): the toolkit is a prerequisite, not installed here.
set -euo pipefail

pkgs=(
	clang libclang-rt-dev llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev
	libcjson-dev pkg-config make gcc g++ systemtap-sdt-dev python3 iproute2 openssh-server
	openssh-client procps pdsh
	# the .pftrace exporter's encoder (protoc-c generates it at build time)
	libprotobuf-c-dev protobuf-c-compiler
	# Perfetto's trace_processor_shell, which the tests import traces with
	libprotobuf32
	# Debian's CPU PyTorch: tests drive its autograd engine (t0530)
	python3-torch
	# a chroot with Debian unstable's CPython 3.14 for the stack tests (scripts/sid-python.sh)
	debootstrap
	# PyPy: the stack tests check that it is said not to be walked (t0300)
	pypy3
)

check_only=0
case "${1:-}" in
"") ;;
--check) check_only=1 ;;
*)
	echo "install-deps: unknown option '$1' (only --check)" >&2
	exit 2
	;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps: no dpkg-query: not a Debian system; install the equivalents of: ${pkgs[*]}" >&2
	exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	if [[ "$status" != "install ok installed" ]]; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})) && ((check_only)); then
	echo "install-deps: missing packages: ${missing[*]} (install them: bash scripts/install-deps.sh)" >&2
	exit 1
fi

if ((${#missing[@]})); then
	as_root=()
	if [[ $(id -u) -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "install-deps: missing packages: ${missing[*]}; installing them needs root (run as root, or install sudo)" >&2
			exit 1
		fi
		as_root=(sudo)
	fi
	echo "install-deps: installing ${missing[*]}"
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"
for h in cuda.h cupti.h; do
	if [[ ! -f "$cuda_inc/$h" ]]; then
		echo "install-deps: CUDA toolkit header $cuda_inc/$h not found (install the CUDA 13 toolkit or set CUDA_HOME)" >&2
		exit 1
	fi
done
