# SPDX-License-Identifier: BSD-2-Clause
# Prints, for every code object of this file (and of the file given as
# argv[1] if any), its line table and the line CPython gives each code
# unit, for tests/unit/test_pysym.c:
#   code <qualname> <co_firstlineno> <line table hex, or ->
#   lines <line of unit 0> <line of unit 1> ...     (-1: no line)
# Before 3.10 the table is co_lnotab, and a unit's line the one
# dis.findlinestarts() gives the last start at or before it.
import dis
import sys


def units(code):
    return len(code.co_code) // 2


def line_of(code, byte_off):
    if not hasattr(code, "co_lines"):
        line = code.co_firstlineno
        for start, start_line in dis.findlinestarts(code):
            if start > byte_off:
                break
            line = start_line
        return line
    for start, end, line in code.co_lines():
        if start <= byte_off < end:
            return -1 if line is None else line
    return -1


def walk(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from walk(c)


def sample(a, b):
    x = (a +
         b)
    f = lambda y: (y *
                   2)
    g = [f(i) for i in range(a)
         if i]
    try:
        z = {k: v
             for k, v in zip(g, g)}
    except ValueError:
        z = None
    while a > 0:
        a -= 1
    def inner():
        nonlocal x
        yield x; yield (
            x)
    return sum(inner()), z


class Decorated:
    @staticmethod
    @property
    def prop(): return 1
    async def coro(self):
        return [i async for i in self]


def main():
    srcs = [__file__] + sys.argv[1:]
    for path in srcs:
        with open(path) as f:
            top = compile(f.read(), path, "exec")
        for code in walk(top):
            tab = (code.co_linetable if hasattr(code, "co_lines") else code.co_lnotab).hex() or "-"
            name = getattr(code, "co_qualname", code.co_name)
            print("code %s %d %s" % (name.replace(" ", "_"), code.co_firstlineno, tab))
            lines = [line_of(code, 2 * i) for i in range(units(code))]
            if hasattr(code, "co_positions"):
                pos = [-1 if p[0] is None else p[0] for p in code.co_positions()]
                assert pos == lines, (name, pos, lines)
            print("lines " + " ".join(map(str, lines)))


main()
