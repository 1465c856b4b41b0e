#!/usr/bin/env bash
# Messages that name what is wrong: root whose capabilities were dropped
# is told so (not that the kernel lacks BPF or BTF); GPUBPF_CUPTI_LIB
# naming a library that is not libcupti is said, and the installed
# libcupti is used instead; a GPUBPF_INJECTION_LIB that cannot be read is
# said.
. "$(dirname "$0")/lib.sh"
test_description "record: capabilities, GPUBPF_CUPTI_LIB and GPUBPF_INJECTION_LIB messages"
require_root
require_gpubpf
require_cmd setpriv capsh
out="$TMPD/out"
mkdir "$out"

# refused DESC STATUS REGEX CMD...: expect_error, and the line does not
# blame the kernel (BTF, "the kernel needs")
refused() {
	local desc=$1
	expect_error "$@"
	is "$desc: does not blame the kernel" \
		"$(grep -c -i -e btf -e "kernel needs" "$TMPD/stderr")" 0
}

re="needs CAP_BPF and CAP_PERFMON \(or CAP_SYS_ADMIN\), which this root process lacks"
refused "root without capabilities (setpriv)" 2 "$re" \
	setpriv --inh-caps=-all --bounding-set=-all -- "$GPUBPF" record -o "$out/t.json" -- true
refused "root without CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN (capsh)" 2 "$re" \
	capsh --drop=cap_bpf,cap_perfmon,cap_sys_admin -- -c \
	"exec '$GPUBPF' record -a -o '$out/t.json'"

# The injection library on its own (no simulated driver in the process, so
# it looks for CUPTI), as the driver would load it
injlib="$GPUBPF_ROOT/build/libgpubpf_cupti.so"
init='import ctypes, sys; sys.stdout.write(str(ctypes.CDLL(sys.argv[1]).InitializeInjection()))'
if "$PY" -c "$init" "$injlib" >"$TMPD/o" 2>"$TMPD/e" && [[ $(cat "$TMPD/o") == 1 ]] && [[ ! -s "$TMPD/e" ]]; then
	notcupti=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
	GPUBPF_CUPTI_LIB="$notcupti" "$PY" -c "$init" "$injlib" >"$TMPD/o" 2>"$TMPD/e"
	is "GPUBPF_CUPTI_LIB not libcupti: the installed one is used" "$(cat "$TMPD/o")" 1
	is "and it is said, in one line" "$(cat "$TMPD/e")" \
		"gpubpf: GPUBPF_CUPTI_LIB='$notcupti' is not libcupti (it has no cuptiGetVersion); using the installed libcupti"
	GPUBPF_CUPTI_LIB=/nonexistent/libcupti.so "$PY" -c "$init" "$injlib" >"$TMPD/o" 2>"$TMPD/e"
	is "GPUBPF_CUPTI_LIB missing: the installed one is used" "$(cat "$TMPD/o")" 1
	like "and it is said" "$(cat "$TMPD/e")" \
		"^gpubpf: GPUBPF_CUPTI_LIB: /nonexistent/libcupti.so: cannot open .*; using the installed libcupti$"
else
	skip "no libcupti installed where the injection library finds it" 4
fi

# Which libcupti the library loads into a process without one
# (cupti/cupti_pick.h), as the driver would load it: the simulated driver
# reports the CUDA version asked, the job's wheel is a fake site-packages
# whose directory a loaded library (a copy of libz) lies under.
cuptilib=$(ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcupti.so.13 \
	"${CUDA_HOME:-/usr/local/cuda}"/extras/CUPTI/lib64/libcupti.so.13 2>/dev/null | head -1)
libz=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
pick='import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
for lib in sys.argv[3:]:
    ctypes.CDLL(lib)
r = ctypes.CDLL(sys.argv[2]).InitializeInjection()
print(r, " ".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcupti" in l})))'
sp="$TMPD/venv/lib/python3.12/site-packages"
mkdir -p "$sp/pkg"
cp "$libz" "$sp/pkg/libz.so.1"
SIMCUDA_DRIVER_VERSION=12080 CUDA_HOME=/nonexistent "$PY" -c "$pick" "$SIMLIB/libcuda.so.1" \
	"$injlib" "$sp/pkg/libz.so.1" >"$TMPD/o" 2>"$TMPD/e"
is "driver 12.8, no CUPTI 12 anywhere: no libcupti loaded (the library waits to tell a recorder why)" \
	"$(cat "$TMPD/o")" "1 "
is "and why, in one line (CUPTI 13 is newer than the driver: not tried)" "$(cat "$TMPD/e")" \
	"gpubpf: GPU timing off: no libcupti.so.12 found (set GPUBPF_CUPTI_LIB to its path)"
SIMCUDA_DRIVER_VERSION=11080 "$PY" -c "$pick" "$SIMLIB/libcuda.so.1" "$injlib" \
	>"$TMPD/o" 2>"$TMPD/e"
is "driver 11.8: GPU timing off, nothing loaded" "$(cat "$TMPD/o")" "1 "
is "and why" "$(cat "$TMPD/e")" \
	"gpubpf: GPU timing off: the driver is CUDA 11; gpubpf reads CUPTI 12 and 13"
if [[ -n "$cuptilib" ]]; then
	# stand-ins: libcupti 13 under the wheels' names (only the path is checked)
	mkdir -p "$sp/nvidia/cuda_cupti/lib" "$sp/nvidia/cu13/lib"
	cp "$cuptilib" "$sp/nvidia/cuda_cupti/lib/libcupti.so.12"
	cp "$cuptilib" "$sp/nvidia/cu13/lib/libcupti.so.13"
	SIMCUDA_DRIVER_VERSION=12080 "$PY" -c "$pick" "$SIMLIB/libcuda.so.1" "$injlib" \
		"$sp/pkg/libz.so.1" >"$TMPD/o" 2>"$TMPD/e"
	is "driver 12.8: the job's CUDA 12 wheel copy is loaded" "$(cat "$TMPD/o")" \
		"1 $sp/nvidia/cuda_cupti/lib/libcupti.so.12"
	"$PY" -c "$pick" "$SIMLIB/libcuda.so.1" "$injlib" "$sp/pkg/libz.so.1" >"$TMPD/o" 2>"$TMPD/e"
	is "driver 13.0: the CUDA 13 wheel copy, before the toolkit's" "$(cat "$TMPD/o")" \
		"1 $sp/nvidia/cu13/lib/libcupti.so.13"
	"$PY" -c "$pick" "$SIMLIB/libcuda.so.1" "$injlib" "$sp/nvidia/cuda_cupti/lib/libcupti.so.12" \
		"$sp/pkg/libz.so.1" >"$TMPD/o" 2>"$TMPD/e"
	is "a libcupti already loaded is the one used (no second copy)" "$(cat "$TMPD/o")" \
		"1 $sp/nvidia/cuda_cupti/lib/libcupti.so.12"
else
	skip "no libcupti 13 in the toolkit to stand in for the wheels' copies" 3
fi

# GPUBPF_INJECTION_LIB naming no file: said, then host calls only
GPUBPF_INJECTION_LIB=/nonexistent/libgpubpf_cupti.so "$GPUBPF" record -q -o "$out/n.json" -- true \
	>/dev/null 2>"$TMPD/e"
is "GPUBPF_INJECTION_LIB missing: said" "$(head -n1 "$TMPD/e")" \
	"gpubpf: GPUBPF_INJECTION_LIB='/nonexistent/libgpubpf_cupti.so': No such file or directory"
like "and GPU timing is off" "$(sed -n 2p "$TMPD/e")" "^gpubpf: GPU timing off: "
done_testing
