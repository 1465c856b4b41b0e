#!/usr/bin/env python3
"""bigevents.py - a gpubpf trace of a few huge events, gzip-compressed.

    bigevents.py -o big.json.gz --events 15 --mib 64 [--small 3] [--host h]

Each big event is an "X" slice whose args hold one string of 'a's, so the
event's text is exactly --mib MiB (fractions allowed; --bytes N for an exact
size); the file stays tiny (deflate).  --small N writes N ordinary events
before the big ones (so a merge has written output when it meets them).
For merge's and the reader's memory and size limits.
"""
import argparse
import zlib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--events", type=int, default=1)
    ap.add_argument("--mib", type=float, default=1.0)
    ap.add_argument("--bytes", type=int, default=0, help="exact event size")
    ap.add_argument("--small", type=int, default=0)
    ap.add_argument("--host", default="big")
    ap.add_argument("--offset", type=int, default=1700000000000000000)
    a = ap.parse_args()
    size = a.bytes or int(a.mib * (1 << 20))
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(a.output, "wb") as f:
        def w(s):
            f.write(z.compress(s if isinstance(s, bytes) else s.encode()))
        w('{"gpubpf":{"version":"0.1.0","host":"%s","realtime_offset_ns":%d},'
          '"traceEvents":[\n' % (a.host, a.offset))
        n = 0
        for i in range(a.small):
            w('%s{"ph":"X","cat":"small","name":"s%d","pid":1,"tid":1,"ts":%d,"dur":1}\n'
              % ("," if n else "", i, 100 + i))
            n += 1
        chunk = b"a" * (1 << 20)
        for i in range(a.events):
            head = ('{"ph":"X","cat":"big","name":"e%d","pid":1,"tid":1,"ts":%d,'
                    '"dur":1,"args":{"blob":"' % (i, 1000 + i))
            tail = '"}}'
            left = size - len(head) - len(tail)
            assert left >= 0
            w(("," if n else "") + head)
            while left > 0:
                k = min(left, len(chunk))
                w(chunk[:k])
                left -= k
            w(tail + "\n")
            n += 1
        w("]}\n")
        f.write(z.flush())


if __name__ == "__main__":
    main()
