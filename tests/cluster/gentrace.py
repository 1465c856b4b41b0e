#!/usr/bin/env python3
"""gentrace.py - synthetic gpubpf traces with a known clock, for merge tests.

Every event happens at a known instant of a global "true" realtime clock,
written in its args as "rt" (ns).  The host's trace clock is
    ts = rt - realtime_offset_ns + skew_ns
so a merge that aligns by realtime offsets puts it at rt - offset_ref
(+ skew_ns, which only --align-collectives can remove).

    gentrace.py -o node1.json --host node1 --offset 1700000000000000000 \
                --pids 100,200 --events 1000 [--skew-ns 1500] [--nccl 40]

Events: process/thread names (metadata first), cuda_api "X" slices on the
process's threads, flow "s"/"f" pairs (ids 1..) from a launch to a GPU
track (tid 0x40000000 + pid, a synthetic track id), counters "C",
instants "i", and NCCL kernels (cat "nccl") whose ends fall at the same
true instant on every host (within --jitter-ns), starts varying per host.
Sorted by ts like gpubpf's exporter unless --shuffle N swaps neighbours.
Args of every event: host, pid0, tid0 (the original pid/tid), rt.
--pretty writes indented JSON with the "gpubpf" object last.
"""
import argparse
import gzip
import json
import random


def us(ns):
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%03d" % (sign, ns // 1000, ns % 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--offset", type=int, default=1700000000000000000)
    ap.add_argument("--skew-ns", type=int, default=0)
    ap.add_argument("--pids", default="100")
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--period-ns", type=int, default=250000)
    ap.add_argument("--start-rt", type=int, default=1700000100000000000)
    ap.add_argument("--nccl", type=int, default=0, help="collectives")
    ap.add_argument("--nccl-period-ns", type=int, default=5000000)
    ap.add_argument("--nccl-skip", type=int, default=0,
                    help="collectives missed at the start of the window")
    ap.add_argument("--jitter-ns", type=int, default=300)
    ap.add_argument("--version", default="0.1.0")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shuffle", type=int, default=0)
    ap.add_argument("--pretty", action="store_true")
    ap.add_argument("--args-pad", type=int, default=0,
                    help="bytes of padding per event (benchmarks)")
    a = ap.parse_args()
    rnd = random.Random("%s/%d" % (a.host, a.seed))
    pids = [int(p) for p in a.pids.split(",")]

    def ts_of(rt):
        return rt - a.offset + a.skew_ns

    meta, evs = [], []   # evs: (ts_ns, seq, text)

    def add(rt, text):
        evs.append((ts_of(rt), len(evs), text))

    def args(pid, tid, rt, extra=""):
        pad = ',"pad":"%s"' % ("x" * a.args_pad) if a.args_pad else ""
        return '{"host":"%s","pid0":%d,"tid0":%d,"rt":%d%s%s}' % (
            a.host, pid, tid, rt, extra, pad)

    for pid in pids:
        gpu = 0x40000000 + pid
        meta.append('{"ph":"M","name":"process_name","pid":%d,"tid":%d,"args":{"name":"python3"}}' % (pid, pid))
        for tid, name in ((pid, "python3"), (pid + 1, "loader"), (gpu, "GPU 0 / stream 7")):
            meta.append('{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":"%s"}}' % (pid, tid, name))
    nflow = 0
    for i in range(a.events):
        pid = pids[i % len(pids)]
        tid = pid + (i // len(pids)) % 2
        gpu = 0x40000000 + pid
        rt = a.start_rt + i * a.period_ns + rnd.randrange(a.period_ns // 2)
        dur = rnd.randrange(1, 200000)
        kind = i % 10
        add(rt, '{"ph":"X","cat":"cuda_api","name":"cuLaunchKernel","pid":%d,"tid":%d,"ts":%s,"dur":%s,"args":%s}'
            % (pid, tid, us(ts_of(rt)), us(dur), args(pid, tid, rt)))
        if kind == 3:
            nflow += 1
            add(rt, '{"ph":"s","cat":"launch","name":"launch","id":%d,"pid":%d,"tid":%d,"ts":%s,"args":%s}'
                % (nflow, pid, tid, us(ts_of(rt)), args(pid, tid, rt, ',"id0":%d' % nflow)))
            rt2 = rt + dur + 1000
            add(rt2, '{"ph":"f","bp":"e","cat":"launch","name":"launch","id":%d,"pid":%d,"tid":%d,"ts":%s,"args":%s}'
                % (nflow, pid, gpu, us(ts_of(rt2)), args(pid, gpu, rt2, ',"id0":%d' % nflow)))
            add(rt2, '{"ph":"X","cat":"kernel","name":"gemm","pid":%d,"tid":%d,"ts":%s,"dur":%s,"args":%s}'
                % (pid, gpu, us(ts_of(rt2)), us(5000), args(pid, gpu, rt2, ',"correlation":%d' % nflow)))
        elif kind == 5:
            add(rt, '{"ph":"C","name":"device memory","pid":%d,"ts":%s,"args":{"bytes":%d}}'
                % (pid, us(ts_of(rt)), rnd.randrange(1 << 30)))
        elif kind == 7:
            add(rt, '{"ph":"i","s":"t","name":"mark \\"q\\" \\u00e9","pid":%d,"tid":%d,"ts":%s,"args":%s}'
                % (pid, tid, us(ts_of(rt)), args(pid, tid, rt)))
    names = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL"]
    pid = pids[0]
    gpu = 0x40000000 + pid
    for j in range(a.nccl_skip, a.nccl):
        end = a.start_rt + 1000000 + j * a.nccl_period_ns + rnd.randrange(-a.jitter_ns, a.jitter_ns + 1)
        dur = rnd.randrange(20000, 900000)
        rt = end - dur
        add(rt, '{"ph":"X","cat":"nccl","name":"%s","pid":%d,"tid":%d,"ts":%s,"dur":%s,"args":%s}'
            % (names[j % 2], pid, gpu, us(ts_of(rt)), us(dur), args(pid, gpu, rt, ',"correlation":%d' % (10000 + j))))
    evs.sort()
    texts = [e[2] for e in evs]
    for k in range(a.shuffle):
        i = rnd.randrange(len(texts) - 1)
        texts[i], texts[i + 1] = texts[i + 1], texts[i]
    header = {"version": a.version, "clock": "CLOCK_MONOTONIC",
              "realtime_offset_ns": a.offset, "host": a.host,
              "dropped_events": {str(p): 0 for p in pids}, "dropped_total": 0,
              "events": len(texts)}
    op = gzip.open if a.output.endswith(".gz") else open
    with op(a.output, "wt") as f:
        if a.pretty:
            d = {"displayTimeUnit": "ns",
                 "traceEvents": [json.loads(t) for t in meta + texts]}
            s = json.dumps(d, indent=1)
            # keep ts text exact: re-insert realtime_offset_ns as an int
            f.write(s[:-2] + ',\n "gpubpf": ' + json.dumps(header, indent=2) + "\n}\n")
        else:
            f.write('{"gpubpf":%s,"displayTimeUnit":"ns","traceEvents":[\n'
                    % json.dumps(header, separators=(",", ":")))
            f.write(",\n".join(meta + texts))
            f.write("\n]}\n")


if __name__ == "__main__":
    main()
