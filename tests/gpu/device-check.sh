#!/usr/bin/env bash
# Every GPU machine check in one call, for a lent GPU machine whose time is
# short: first what the machine is and whether gpubpf's BPF loads there,
# then t0970 (late attach), t0975 (the job's speed after detaching), t0950
# (record, probe sites, --autograd), t0960 (GPU timing against
# torch.profiler) and t0980 (CUPTI 12), each under its own time limit.
# Run as root there from the repository root, with build/gpubpf,
# build/libgpubpf_cupti.so and .carry (libcjson.so.1, bpftool: `make
# gpu-carry` fills it) carried from the build machine:
#     bash tests/gpu/device-check.sh [t0970 t0975 t0950 t0960 t0980]
# Writes $OUT/device.log (everything, TAP included), one compressed tar of
# each check's findings but its JSON traces (too big to come back), and
# each .pftrace it wrote, gzipped; exits 0 when BPF loaded and every check
# ran.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/gpubpf-device}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
unset CUDA_INJECTION64_PATH
checks=("$@")
((${#checks[@]})) || checks=(t0970 t0975 t0950 t0960 t0980)
declare -A limit=([t0970]=190 [t0975]=230 [t0950]=120 [t0960]=140 [t0980]=90)

section() { echo "=== $* ($(date +%T))"; }

machine() {
	section machine
	uname -a
	grep PRETTY_NAME /etc/os-release
	ldd --version | head -1
	nproc
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
	ls -l /sys/kernel/btf/vmlinux
	# what holding processes at their libcuda mmap needs (the syscall tracepoint)
	ls -d /sys/kernel/tracing/events/syscalls/sys_enter_mmap 2>&1
	{ zcat /proc/config.gz || cat "/boot/config-$(uname -r)"; } 2>/dev/null |
		grep -E 'CONFIG_FTRACE_SYSCALLS|CONFIG_KPROBES=|CONFIG_FUNCTION_TRACER=|CONFIG_FPROBE='
	cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo "no yama"
	python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.is_available())'
	find / -xdev -name 'libcupti.so*' -not -path '/proc/*' 2>/dev/null | head -8
	ldconfig -p | grep -E 'libcuda.so.1 |libcjson' | head -4
	ldd build/gpubpf | grep -i 'not found'
	build/gpubpf --version
}

# BPF loads, an early-injected CUDA process gets GPU timing: the precondition
# of everything else
smoke() {
	section "smoke: record -- a one-kernel PyTorch program"
	timeout -k 5 90 build/gpubpf record -o "$out/smoke.json" -- \
		python3 -c 'import torch; x = torch.ones(1 << 20, device="cuda"); print("sum", (x * 2).sum().item())'
	local rc=$?
	echo "smoke rc $rc"
	[[ -s "$out/smoke.json" ]] || return 1
	python3 - "$out/smoke.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter(e.get("cat") for e in d["traceEvents"])
print("categories", dict(c))
print("gpu", json.dumps(d["gpubpf"].get("gpu"))[:600])
PY
	timeout 60 build/gpubpf report "$out/smoke.json" | head -40
	# why processes cannot be held where they cannot
	timeout 30 build/gpubpf record -v --no-device -d 1s -a -o /tmp/hold.json 2>&1 |
		grep -i 'mmap\|hold' | grep -v 'relo\|found\|patched\|matching\|added' | head -12
	return $rc
}

{
	machine 2>&1
	if smoke 2>&1; then
		for t in "${checks[@]}"; do
			f=$(ls tests/gpu/"$t"-*.sh)
			section "$f"
			mkdir -p "$out/$t"
			OUT="$out/$t" timeout -k 10 "${limit[$t]:-150}" bash "$f" 2>&1
			echo "=== $t rc $? ($(date +%T))"
			# what comes back is at most 16 MB a file: traces as .pftrace, on
			# their own, and no .json.gz
			for f in "$out/$t"/*.pftrace; do
				[[ -f "$f" ]] && gzip -c "$f" >"$out/$t-$(basename "$f").gz"
			done
			tar czf "$out/$t.tgz" --exclude='*.json.gz' --exclude='*.pftrace' -C "$out" "$t" &&
				rm -rf "${out:?}/$t"
		done
	else
		echo "=== smoke failed: no check run"
		dmesg 2>/dev/null | tail -20
	fi
} 2>&1 | tee "$out/device.log"
gzip -f "$out"/smoke.json 2>/dev/null
grep -q '^=== smoke failed' "$out/device.log" && exit 1
exit 0
