#!/usr/bin/env bash
# Threads of a Python process that run no Python, under two gpubpf builds:
# `bash bench/pythreads_compare.sh OLD NEW`, as root (not part of `make
# bench`: it compares builds).  Two jobs on the simulated driver, their C
# threads from tests/py/workpool.c (loaded with ctypes), each recorded
# REPS (3) times by each build in turn, with Python stacks (the default):
#   lone: THREADS (100) Python threads wait while a C thread without a
#         Python thread state (a driver's, a library's worker) launches
#         1000 kernels 1 ms apart (wp_lone);
#   idle: a C thread that keeps an idle thread state, as PyTorch's autograd
#         threads do, launches 50 kernels and hands 2 to a C thread without
#         one, 200 times (wp_run).
# Prints, per job and build, the median over the recordings of the BPF run
# time per hit (kernel.bpf_stats_enabled) of the entry program and, for
# lone, of the sched_switch program.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
OLD=${1:?usage: pythreads_compare.sh OLD_GPUBPF NEW_GPUBPF}
NEW=${2:?usage: pythreads_compare.sh OLD_GPUBPF NEW_GPUBPF}
REPS=${REPS:-3}
THREADS=${THREADS:-100}
PYTHON=${PYTHON:-python3}
T=$(mktemp -d)
bpf_stats_on
export LD_LIBRARY_PATH=$PWD/build/sim
cc -O2 -shared -fPIC -o "$T/libworkpool.so" tests/py/workpool.c -lpthread -ldl
cat >"$T/lone.py" <<'PY'
import ctypes, sys, threading, time
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(int(sys.argv[2]))]
for t in ts:
    t.start()
pool = ctypes.CDLL(sys.argv[1])
pool.wp_start.argtypes = [ctypes.c_char_p]
assert pool.wp_start(b"libcuda.so.1") == 0
time.sleep(0.3)
pool.wp_lone(1000)
ev.set()
for t in ts:
    t.join()
pool.wp_stop()
PY
cat >"$T/idle.py" <<'PY'
import ctypes, sys, time
pool = ctypes.CDLL(sys.argv[1])
pool.wp_start.argtypes = [ctypes.c_char_p]
assert pool.wp_start(b"libcuda.so.1") == 0
time.sleep(0.3)
for i in range(200):
    pool.wp_run(50)
pool.wp_stop()
PY
for job in lone idle; do
	: >"$T/$job.raw"
	for rep in $(seq "$REPS"); do
		for b in "$OLD" "$NEW"; do
			with_prog_stats gb_ "$T/s" "$T/o" "$b" record --quiet -o "$T/t.json" -- \
				"$PYTHON" "$T/$job.py" "$T/libworkpool.so" "$THREADS"
			echo "$b $(awk '$1 == "gb_entry_multi" || $1 == "gb_entry" {e = $2} $1 == "gb_switch" {s = $2} END {print e + 0, s + 0}' "$T/s")" >>"$T/$job.raw"
		done
	done
	python3 - "$job" "$OLD" "$NEW" "$T/$job.raw" <<'PY'
import statistics, sys
job, old, new, raw = sys.argv[1:]
rows = [l.split() for l in open(raw)]
for name, b in (("old", old), ("new", new)):
    e = statistics.median(float(r[1]) for r in rows if r[0] == b)
    s = statistics.median(float(r[2]) for r in rows if r[0] == b)
    print("%s: %s: entry program %.0f ns/hit%s" % (job, name, e, ", sched_switch %.0f ns/hit" % s if job == "lone" else ""))
PY
done
