"""Driver calls from known Python stacks, for the stack tests (t0300).

usage: stackwork.py TRUTH.json [--deep N] [--exact N]

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH) with ctypes and makes
launches and syncs from: methods, a generator, a lambda, a function called
by a C builtin (map), recursion, coroutines awaiting each other under
asyncio's event loop (before and after they are suspended), a second thread, frames above a wide one
(2.4 KiB: on 3.11+ they lie across a page boundary of the data stack) from
one depth, then another, then the first again, and one stack deeper than
N frames (default 300); with --exact, one of exactly N frames (gpubpf's
--stack-depth: all of it, not flagged truncated).  At each call it records the stack the call is made
from, innermost frame first, as "qualname (file:line)" -- the form gpubpf
writes; Python 3.10 code objects carry no qualified name, so there the name
is co_name -- into TRUTH.json: [{"name", "tid", "stack": [...]}, ...].
"""
import asyncio
import ctypes
import json
import sys
import threading
import time

HERE = __file__
truth = []
lock = threading.Lock()
lib = ctypes.CDLL("libcuda.so.1")


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    return ctypes.CDLL(None).syscall(186)


def frame_name(code):
    return getattr(code, "co_qualname", code.co_name)


def stack_of(frame):
    out = []
    while frame is not None:
        out.append("%s (%s:%d)" % (frame_name(frame.f_code), frame.f_code.co_filename,
                                   frame.f_lineno))
        frame = frame.f_back
    return out


def _call_line():
    # the line of the driver call in cu(), so the truth names that line
    src = open(HERE).read().splitlines()
    return next(i + 1 for i, l in enumerate(src) if l.strip() == "ret = fn(*args)  # the call")


CALL_LINE = None


def cu(name, *args):
    fn = getattr(lib, name)
    me = sys._getframe(0)
    stack = ["%s (%s:%d)" % (frame_name(me.f_code), me.f_code.co_filename, CALL_LINE)]
    stack += stack_of(me.f_back)
    with lock:
        truth.append({"name": name, "tid": gettid(), "stack": stack})
    ret = fn(*args)  # the call
    if ret != 0:
        raise RuntimeError("%s returned %d" % (name, ret))


FUNC = ctypes.c_void_p()
US = ctypes.c_uint32(5)
PARAMS = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(US), ctypes.c_void_p))


def launch():
    cu("cuLaunchKernel", FUNC, 1, 1, 1, 32, 1, 1, 0, None, PARAMS, None)


class Layer:
    def forward(self):
        launch()


class Model:
    def __init__(self):
        self.layers = [Layer(), Layer()]

    def forward(self):
        for layer in self.layers:
            layer.forward()


def batches(n):
    for i in range(n):
        launch()
        yield i


def recurse(n):
    if n == 0:
        cu("cuCtxSynchronize")
        return
    recurse(n - 1)


def deep(n):
    if n == 0:
        launch()
        return
    deep(n - 1)


def exactly(n):
    if len(stack_of(sys._getframe(0))) + 2 < n:     # + launch() and cu()
        exactly(n)
        return
    launch()


# wide(n): deep(n) from a frame of 300 local variables (never assigned),
# compiled from a string, as dataclasses and namedtuple compile theirs
exec("def wide(n):\n"
     "    if n < 0:\n"
     "        %s = None\n"
     "    deep(n)\n" % " = ".join("w%d" % i for i in range(300)))


async def ainner():
    launch()
    await asyncio.sleep(0)      # suspended: resumed by the event loop
    launch()


async def aouter():
    await ainner()


def via_map(x):
    launch()
    return x


def worker():
    Model().forward()
    cu("cuStreamSynchronize", None)


def main():
    global CALL_LINE
    CALL_LINE = _call_line()
    out = sys.argv[1]
    depth = int(sys.argv[sys.argv.index("--deep") + 1]) if "--deep" in sys.argv else 300
    sys.setrecursionlimit(depth + 200)
    if lib.cuInit(0) or lib.cuModuleGetFunction(ctypes.byref(FUNC), None, b"stack_kernel"):
        raise RuntimeError("cannot set up the simulated driver")
    Model().forward()
    for _ in batches(2):
        pass
    (lambda: launch())()
    list(map(via_map, [1, 2]))
    recurse(5)
    if hasattr(asyncio, "run"):
        asyncio.run(aouter())
    else:                                   # 3.6
        asyncio.new_event_loop().run_until_complete(aouter())
    for n in (30, 2, 30):
        wide(n)
    t = threading.Thread(target=worker, name="second")
    t.start()
    t.join()
    deep(depth)
    if "--exact" in sys.argv:
        exactly(int(sys.argv[sys.argv.index("--exact") + 1]))
    cu("cuCtxSynchronize")
    with open(out, "w") as f:
        json.dump(truth, f)
    # gpubpf names frames from the live process: a stack first seen in a
    # process's last instant can miss that (documented); stay a moment so
    # the test checks the names, not that race
    time.sleep(0.2)


if __name__ == "__main__":
    main()
