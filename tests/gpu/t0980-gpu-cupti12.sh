#!/usr/bin/env bash
# test-timeout: 150
# GPU machine check for CUPTI 12 (issue #9), where a GPU is lent: CUPTI 12
# (Debian's 12.4, carried in .carry/cupti12 by `make gpu-carry`) under the
# machine's newer driver, named by GPUBPF_CUPTI_LIB, in a CUDA program of
# its own (.carry/bin/cuda_kernels: no framework, so no other libcupti is
# loaded first).  Recorded from its start and late (record -p): every
# launch has its kernel from CUPTI 12's records (Kernel9 and the rest),
# linked; the program had that libcupti mapped.
. "$(dirname "$0")/../lib.sh"
test_description "GPU machine: GPU timing through CUPTI 12"
gpu_setup /tmp/gpubpf-gpu-cupti12
lib12=$PWD/.carry/cupti12/libcupti.so.12
prog=$PWD/.carry/bin/cuda_kernels
[[ -r $lib12 ]] || skip_all "no CUPTI 12 carried (.carry/cupti12: bash scripts/cupti12.sh, then make gpu-carry)"
[[ -x $prog ]] || skip_all "no .carry/bin/cuda_kernels (make gpu-carry)"
check "the program runs untraced" "$prog" 10
diag "$(cat "$TMPD/.check.out")"

# kernels per name in a trace, and the program's own count
kernels() {
	json_query "$1" 'len([e for e in ev if e.get("cat") == "kernel" and "gpubpf_add" in e["name"]])'
}

# 1. from its start
GPUBPF_CUPTI_LIB=$lib12 "$GPUBPF" record -o "$out/start.json" -- "$prog" 2000 \
	>"$out/start.out" 2>"$out/start.err"
is "record -- CMD exited 0" "$?" 0
tail -n 3 "$out/start.err" | diag
is "the program had CUPTI 12 mapped" "$(sed -n 's/^libcupti //p' "$out/start.out")" "$lib12"
is "no GPU timing error" "$(json_query "$out/start.json" 'd["gpubpf"]["gpu"]["errors"]')" "{}"
is "a kernel for each of the 2000 launches" "$(kernels "$out/start.json")" 2000
tap_from python3 tests/check_gpu.py "$out/start.json"

# 2. late: the variable in the job's environment, where the library reads
# it; both recordings first, then their checks (a recording of the fast
# loop is ~100 MB of JSON, slow to check)
GPUBPF_CUPTI_LIB=$lib12 "$prog" 20 20 >"$out/late.out" 2>"$out/late.err" &
w=$!
at_exit "kill $w 2>/dev/null"
sleep 2
for i in 1 2; do
	check "late: record -p, time $i" "$GPUBPF" record -p "$w" -d 2s -o "$out/late$i.json"
	tail -n 2 "$TMPD/.check.out" | diag
done
for i in 1 2; do
	is "late $i: no GPU timing error" "$(json_query "$out/late$i.json" 'd["gpubpf"]["gpu"]["errors"]')" "{}"
	like "late $i: kernels recorded" "$(kernels "$out/late$i.json")" "^[1-9][0-9]*$"
	tap_from python3 tests/check_gpu.py --edge-ms 250 "$out/late$i.json"
done
is "late: the library was loaded by the first recording only" \
	"$(json_query "$out/late1.json" "list(d['gpubpf']['gpu']['late_attach'])"):$(json_query \
	"$out/late2.json" "d['gpubpf']['gpu']['late_attach']")" "[\"$w\"]:{}"
wait "$w"
is "late: the program exited 0" "$?" 0
is "late: the program had CUPTI 12 mapped" "$(sed -n 's/^libcupti //p' "$out/late.out")" "$lib12"
done_testing
