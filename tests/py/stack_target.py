# SPDX-License-Identifier: BSD-2-Clause
# A process whose main thread parks in time.sleep under a known Python
# stack (methods, a decorator, a generator, a lambda called from C by map,
# recursion, a comprehension, non-ASCII names, code compiled at run time), for tests/unit/test_pyruntime.c.  It writes
# to argv[1], then sleeps:
#   thread <threading.get_ident()>
#   frame <qualname>\t<file>\t<line>       innermost first, as
#                                          traceback.extract_stack() (reversed)
#   done
import functools
import sys
import threading
import time
import traceback

OUT = sys.argv[1]


def qualname(code):
    return getattr(code, "co_qualname", code.co_name)


def dump(frame):
    # frames as the interpreter links them, checked against extract_stack
    frames = []
    f = frame
    while f is not None:
        frames.append((qualname(f.f_code), f.f_code.co_filename, f.f_lineno))
        f = f.f_back
    summary = traceback.extract_stack(frame)[::-1]
    assert [(s.filename, s.lineno) for s in summary] == [(x[1], x[2]) for x in frames]
    with open(OUT + ".tmp", "w", encoding="utf-8") as out:
        out.write("thread %d\n" % threading.get_ident())
        for q, fn, ln in frames:
            out.write("frame %s\t%s\t%d\n" % (q, fn, ln))
        out.write("done\n")
    import os
    os.rename(OUT + ".tmp", OUT)


def park():
    dump(sys._getframe()); time.sleep(600)


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return fn(*a,
                  **kw)
    return wrapper


class Model:
    def forward(self, n):
        return list(map(lambda k: self.step(k), [n]))

    @traced
    def step(self, n):
        return [x for x in self.gen(n)]

    def gen(self, n):
        yield recurse(
            n)


def recurse(n):
    if n:
        return recurse(n - 1)
    return größe()


# names that are not ASCII: 1-byte (latin-1), 2-byte and 4-byte str kinds
def größe():
    return 函数()


def 函数():
    return eval(compile("park()", "<🐍 snake>", "eval"))


Model().forward(3)
