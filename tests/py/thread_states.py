"""A thread that blocks for known reasons in known functions, for t0320.

usage: thread_states.py TRUTH.json [--phase-s S]
       thread_states.py --threads N --run-s S

Loads the simulated libcuda.so.1 (LD_LIBRARY_PATH), launches a 100 us
kernel (sim/train.py's Driver), then runs, on its main thread, one phase
after another, each S seconds (default 0.5), each in its own function and
followed by another such launch, so that the GPU runs dry over each phase
(host-bound idle time caused by the phase):
  busy      busy_loop(): pure Python
  gil       gil_wait(): time.sleep(0) in a loop while the thread "hog" runs
            pure Python: the main thread waits for the GIL that hog holds
  read      blocking_read(): os.read of a pipe another thread writes to
            after S seconds
  sleep     sleeping(): time.sleep(S)
  shared    shared_cpu(): busy_loop() pinned to one CPU together with a
            busy child process: runnable about half the time
and writes TRUTH.json: {"pid", "main", "hog", "phases": [{"name", "start",
"end"}]}, times in CLOCK_MONOTONIC ns (time.monotonic_ns).

With --threads N: N threads that each sleep and compute in turn for S
seconds (-p attach and many-thread tests), and one, "reader", blocked
reading a pipe all along; then they exit.
"""
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim"))
import train  # noqa: E402

lib = ctypes.CDLL("libcuda.so.1")


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    return ctypes.CDLL(None).syscall(186)     # 3.7: gettid(2)


def busy_loop(until):
    n = 0
    while time.monotonic_ns() < until:
        n += 1
    return n


def gil_wait(until):
    while time.monotonic_ns() < until:
        time.sleep(0)


def blocking_read(fd):
    return os.read(fd, 1)


def sleeping(seconds):
    time.sleep(seconds)


def shared_cpu(until):
    busy_loop(until)


def phases(truth_path, phase_s):
    ns = int(phase_s * 1e9)
    truth = {"pid": os.getpid(), "main": gettid(), "phases": []}
    drv = train.Driver(None, False)
    drv.init()
    kernel = train.Kernel(drv, drv.load_module(), "compute")
    drv.launch(kernel, 100)

    def phase(name, fn):
        start = time.monotonic_ns()
        fn(start + ns)
        truth["phases"].append({"name": name, "start": start, "end": time.monotonic_ns()})
        drv.launch(kernel, 100)

    phase("busy", busy_loop)

    hog_tid = []
    go = threading.Event()

    def hog(until):
        hog_tid.append(gettid())
        go.set()
        busy_loop(until)

    t = threading.Thread(target=hog, name="hog", args=(time.monotonic_ns() + 3 * ns,))
    t.start()
    go.wait()
    phase("gil", gil_wait)
    t.join()
    truth["hog"] = hog_tid[0]

    r, w = os.pipe()
    writer = threading.Timer(phase_s, os.write, (w, b"x"))
    writer.start()
    phase("read", lambda until: blocking_read(r))
    writer.join()

    phase("sleep", lambda until: sleeping(phase_s))

    cpus = os.sched_getaffinity(0)
    cpu = min(cpus)
    child = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c",
                              "while True: pass"])
    os.sched_setaffinity(0, {cpu})
    time.sleep(0.05)        # the child is spinning
    phase("shared", shared_cpu)
    os.sched_setaffinity(0, cpus)
    child.kill()
    child.wait()
    with open(truth_path, "w") as f:
        json.dump(truth, f)


def many_threads(n, run_s):
    lib.cuInit(0)
    until = time.monotonic_ns() + int(run_s * 1e9)

    def worker():
        while time.monotonic_ns() < until:
            time.sleep(0.01)
            busy_loop(time.monotonic_ns() + 200000)

    r, w = os.pipe()
    threads = [threading.Thread(target=worker) for _ in range(n)]
    threads.append(threading.Thread(target=blocking_read, args=(r,), name="reader"))
    for t in threads:
        t.start()
    while time.monotonic_ns() < until:
        lib.cuInit(0)
        time.sleep(0.05)
    os.write(w, b"x")
    for t in threads:
        t.join()


def main():
    args = sys.argv[1:]
    phase_s = float(args[args.index("--phase-s") + 1]) if "--phase-s" in args else 0.5
    if "--threads" in args:
        many_threads(int(args[args.index("--threads") + 1]),
                     float(args[args.index("--run-s") + 1]))
    else:
        phases(args[0], phase_s)


if __name__ == "__main__":
    main()
