#!/usr/bin/env bash
# Install the Debian packages gpubpf's build and tests need.  Idempotent:
# when everything is present it only queries dpkg and exits.
set -euo pipefail

pkgs=(
	clang libclang-rt-dev llvm libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev
	libcjson-dev pkg-config make gcc g++ systemtap-sdt-dev python3 iproute2 openssh-server
	openssh-client procps pdsh
)

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	if [[ "$status" != "install ok installed" ]]; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: missing packages (need root to install): ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"
for h in cuda.h cupti.h; do
	if [[ ! -f "$cuda_inc/$h" ]]; then
		echo "install-deps: CUDA toolkit header $cuda_inc/$h not found (install the CUDA 13 toolkit or set CUDA_HOME)" >&2
		exit 1
	fi
done
