#!/usr/bin/env python3
"""check_merge.py - check a merged trace of gentrace.py inputs (TAP lines).

    check_merge.py MERGED --hosts n1,n2,n3 --inputs a.json,b.json,c.json
                   [--tolerance-ns N] [--skew n2=1500,...]

Prints "ok - ..." / "not ok - ..." lines for tests/lib.sh's tap_from:
host groups and labels, remapped pids/tids (one merged value per
(host, original), none shared by two hosts, main thread still pid ==
tid), timestamps at rt - realtime_offset of the merged trace (exact, or
within --tolerance-ns; the first input's clock, moved on by whole seconds
where an input began before its zero), none negative, flow ids kept apart per host, every input event
present, sorted output, and the skews reported in the metadata.
"""
import argparse
import decimal
import gzip
import json
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)


def ns(v):
    return int(decimal.Decimal(v) * 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("merged")
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--tolerance-ns", type=int, default=0)
    ap.add_argument("--skew", default="")
    a = ap.parse_args()
    hosts = a.hosts.split(",")
    inputs = [load(p) for p in a.inputs.split(",")]
    d = load(a.merged)
    ev = d["traceEvents"]
    bad = 0

    def check(cond, desc, *diag):
        nonlocal bad
        print(("ok - " if cond else "not ok - ") + desc)
        if not cond:
            bad += 1
            for x in diag:
                print("# " + str(x))

    g = d["gpubpf"]
    m = g.get("merge", {})
    check([h["host"] for h in m.get("hosts", [])] == hosts,
          "metadata lists the hosts in input order",
          [h.get("host") for h in m.get("hosts", [])])
    off0 = inputs[0]["gpubpf"]["realtime_offset_ns"]
    added = m.get("clock_added_ns")
    off = g["realtime_offset_ns"]
    base = g.get("ts_base_ns", 0)
    check(added is not None and added >= 0 and added % 10 ** 9 == 0 and off == off0 - added and
          g["clock"] == "CLOCK_MONOTONIC",
          "merged clock is the first host's, moved on by whole seconds only", off, off0, added)
    check(g["events"] == sum(i["gpubpf"]["events"] for i in inputs),
          "event count in the metadata is the inputs' sum")

    pnames = {}
    for e in ev:
        if e["ph"] == "M" and e["name"] == "process_name":
            pnames[e["pid"]] = e["args"]
    want = set()
    for h, inp in zip(hosts, inputs):
        for e in inp["traceEvents"]:
            if e["ph"] == "M" and e["name"] == "process_name":
                want.add("%s: %s" % (h, e["args"]["name"]))
    check({p["name"] for p in pnames.values()} >= want and
          len({p["host"] for p in pnames.values()}) == len(hosts),
          "one group of processes per host, names prefixed with the host",
          sorted(p["name"] for p in pnames.values()), sorted(want))

    data = [e for e in ev if e["ph"] != "M"]
    check(len(data) == sum(len([x for x in i["traceEvents"] if x["ph"] != "M"]) for i in inputs),
          "every input event is in the merged trace", len(data))
    ts = [ns(e["ts"]) for e in data]
    check(all(ts[i] <= ts[i + 1] for i in range(len(ts) - 1)), "events sorted by time")
    check(not ts or min(ts) + base >= 0, "no event before the merged clock's zero",
          min(ts) + base if ts else None)

    pmap, tmap, ok_map = {}, {}, True
    for e in data:
        args = e.get("args", {})
        if "host" not in args:
            continue
        k = (args["host"], args["pid0"])
        if pmap.setdefault(k, e["pid"]) != e["pid"]:
            ok_map = False
        if "tid" in e:
            k = (args["host"], args["tid0"])
            if tmap.setdefault(k, e["tid"]) != e["tid"]:
                ok_map = False
    check(ok_map and len(set(pmap.values())) == len(pmap) and len(set(tmap.values())) == len(tmap),
          "pids and tids remapped one to one, no value shared by two hosts",
          len(pmap), len(set(pmap.values())), len(tmap), len(set(tmap.values())))
    check(all(tmap.get(k) == v for k, v in pmap.items() if k in tmap),
          "a main thread keeps tid == pid")
    check(all(pnames.get(v, {}).get("host") == k[0] and pnames[v].get("host_pid") == k[1]
              for k, v in pmap.items()),
          "each merged pid is named after its host, with its original pid")
    check(all(p < 2 ** 32 for p in list(pmap.values()) + list(tmap.values())),
          "pids and tids fit in 32 bits")

    worst, n = 0, 0
    for e in data:
        rt = e.get("args", {}).get("rt")
        if rt is None:
            continue
        n += 1
        worst = max(worst, abs(ns(e["ts"]) + base - (rt - off)))
    check(n > 0 and worst <= a.tolerance_ns,
          "timestamps aligned on one clock (worst error %d ns, tolerance %d ns)" % (worst, a.tolerance_ns))

    ids = {}
    for e in data:
        if e["ph"] in ("s", "f"):
            ids.setdefault((e["args"]["host"], e["args"]["id0"]), set()).add(json.dumps(e["id"]))
    check(ids and all(len(v) == 1 for v in ids.values()) and
          len({next(iter(v)) for v in ids.values()}) == len(ids),
          "flow ids kept apart per host, pairs intact")

    if a.skew:
        rep = {h["host"]: h for h in m["hosts"]}
        for kv in a.skew.split(","):
            h, s = kv.split("=")
            got = rep[h].get("skew_ns")
            check(got is not None and abs(got - int(s)) <= 1000,
                  "skew of %s recovered within 1 us (%s ns, true %s ns)" % (h, got, s))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
