"""Driver calls from functions whose file name and line table end a page
that the next one, never touched, follows: for t0302.

usage: page_edge.py TRUTH.json

A code token (3.6-3.11) folds the bytes of the code object's file name and
line table, read 128 bytes at a time; BPF cannot read a page that is not
faulted in, and small objects at the end of an allocator's pool have one
after them.  Each function here is a copy of one compiled normally whose
co_filename and line table are copies of its own placed so, in memory of
its own (an anonymous mapping of two pages, the second never touched), and
never freed.  Writes the stacks of its calls as tests/py/stackwork.py does.
"""
import ctypes
import json
import sys
import types

import stackwork

PAGE = 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]

SOURCE = """\
def edge_{i}(n):
    if n:
        launch()
    launch()
"""


def at_page_end(obj):
    """A copy of str or bytes obj ending a page that an untouched one follows."""
    size = sys.getsizeof(obj)
    base = libc.mmap(None, 2 * PAGE, 3, 0x22, -1, 0)    # PROT_READ|WRITE, PRIVATE|ANONYMOUS
    if base in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap")
    at = base + PAGE - size
    ctypes.memmove(at, id(obj), size)
    ctypes.c_ssize_t.from_address(at).value = 1 << 40   # never freed
    return ctypes.cast(at, ctypes.py_object).value


def with_objects(code, filename, table):
    if hasattr(code, "replace"):                        # 3.8+
        field = "co_linetable" if sys.version_info >= (3, 10) else "co_lnotab"
        return code.replace(co_filename=filename, **{field: table})
    return types.CodeType(code.co_argcount, code.co_kwonlyargcount, code.co_nlocals,
                          code.co_stacksize, code.co_flags, code.co_code, code.co_consts,
                          code.co_names, code.co_varnames, filename, code.co_name,
                          code.co_firstlineno, table, code.co_freevars, code.co_cellvars)


def edge_function(i):
    scope = {"launch": stackwork.launch}
    # a file name made here (not interned: the copy is the code object's own)
    filename = "".join(["/page-edge/", str(i), ".py"])
    exec(compile(SOURCE.format(i=i), filename, "exec"), scope)
    code = scope["edge_%d" % i].__code__
    table = code.co_linetable if sys.version_info >= (3, 10) else code.co_lnotab
    edge = with_objects(code, at_page_end(filename), at_page_end(table))
    assert edge.co_filename == filename and edge.co_filename is not filename
    return types.FunctionType(edge, scope)


def main():
    stackwork.CALL_LINE = stackwork._call_line()
    lib = stackwork.lib
    if lib.cuInit(0) or lib.cuModuleGetFunction(ctypes.byref(stackwork.FUNC), None,
                                                b"stack_kernel"):
        raise RuntimeError("cannot set up the simulated driver")
    stackwork.Model().forward()     # what check_stacks.py looks for first
    for i in range(8):
        edge_function(i)(i % 2)
    stackwork.cu("cuCtxSynchronize")
    with open(sys.argv[1], "w") as f:
        json.dump(stackwork.truth, f)


if __name__ == "__main__":
    main()
