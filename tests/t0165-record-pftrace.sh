#!/usr/bin/env bash
# The training loop recorded once and written twice, "-o run.json -o
# run.pftrace": the .pftrace imports into Perfetto without errors, holds
# the same slices per category as the JSON, one flow from each call to
# each of its GPU slices, calls inside their innermost Python function,
# named GPU tracks under their process and the memory counter tracks.
. "$(dirname "$0")/lib.sh"
test_description "record -o run.json -o run.pftrace: Perfetto's importer reads the same trace"
require_bpf
require_sim
require_file "$GPUBPF_ROOT/build/bench/gpuwork"

export LD_LIBRARY_PATH="$SIMLIB"
# through a shell that runs helpers first: processes without events
check "record writes both files in one go" \
	"$GPUBPF" record -q -o "$TMPD/run.json" -o "$TMPD/run.pftrace" -- \
	sh -c 'sleep 0.2; ls / >/dev/null; exec "$0" "$@"' \
	"$PY" "$GPUBPF_ROOT/sim/train.py" --steps 8 --sync-every 4
like "the .pftrace is a protobuf Trace (field 1, length-delimited)" \
	"$(head -c1 "$TMPD/run.pftrace" | od -An -tx1)" "0a"
out=$TMPD/bad
mkdir -p "$out"
expect_error "a bad .pftrace path" 1 "cannot write '$out/no/run.pftrace'" \
	"$GPUBPF" record -o "$out/no/run.pftrace" -- true
check "a graph launch of 5 kernels, replayed 4 times, to .pftrace" \
	"$GPUBPF" record -q -o "$TMPD/graph.pftrace" -- \
	"$GPUBPF_ROOT/build/bench/gpuwork" -l "$SIMLIB/libcuda.so.1" -m graph -k 5 -r 4

if ! tp=$(trace_processor); then
	skip "Perfetto's trace_processor_shell not found (set TRACE_PROCESSOR)" 12
	done_testing
	exit
fi
# q TRACE SQL: the query's rows as CSV, without the header
q() { "$tp" query "$1" <<<"$2" 2>/dev/null | tail -n +2; }

perfetto_ok "$TMPD/run.pftrace"
perfetto_ok "$TMPD/graph.pftrace"  # a flow from each graph launch to each of its kernels
per_cat="select category, count(*) from slice where category != 'gpubpf' group by 1 order by 1"
is "the same slices per category in .json and .pftrace" \
	"$(q "$TMPD/run.pftrace" "$per_cat")" "$(q "$TMPD/run.json" "$per_cat")"
procs="select pid from process where pid > 0 order by 1"
is "the same processes in .json and .pftrace: not the job's helpers, as empty ones" \
	"$(q "$TMPD/run.pftrace" "$procs")" "$(q "$TMPD/run.json" "$procs")"
is "GPU slices on named GPU tracks under their process" \
	"$(q "$TMPD/run.pftrace" "select count(*) from slice s left join process_track t
		on s.track_id = t.id left join process p using (upid)
		where s.category in ('kernel', 'gpu_memcpy', 'gpu_memset')
		and not coalesce(t.name glob 'GPU 0 / stream *' and p.pid is not null, 0)")" 0
is "a memory counter track per process and device" \
	"$(q "$TMPD/run.pftrace" "select name, count(*) > 1 from counter_track t
		join counter c on c.track_id = t.id group by t.id")" '"device memory GPU 0",1'
is "the trace metadata as an instant with its arguments" \
	"$(q "$TMPD/run.pftrace" "select a.display_value from slice s join args a using (arg_set_id)
		where s.name = 'gpubpf' and a.key = 'debug.clock'")" '"CLOCK_MONOTONIC"'
# the JSON's times count from its ts_base_ns; the protobuf's are absolute
base=$(json_query "$TMPD/run.json" 'd["gpubpf"]["ts_base_ns"]')
is "times exactly those of the JSON" \
	"$(q "$TMPD/run.pftrace" "select min(ts), max(ts + dur) from slice where category != 'gpubpf'")" \
	"$(q "$TMPD/run.json" "select min(ts) + $base, max(ts + dur) + $base from slice")"
done_testing
