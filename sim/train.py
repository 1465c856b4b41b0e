#!/usr/bin/env python3
"""train.py - a deterministic training-loop-shaped CUDA workload (ctypes only).

It drives the CUDA driver API through simcuda (sim/site-packages/simcuda.py),
its stand-in for a framework's binding, so gpubpf can be tested against it:
with build/sim/libcuda.so.1 (the simulated driver) it behaves like a small
GPU-bound training job; with NVIDIA's stub libcuda (every call returns 34,
CUDA_ERROR_STUB_LIBRARY) run it with --expect-fail.

    LD_LIBRARY_PATH=build/sim python3 sim/train.py --steps 10 --truth t.json

Shape of one step (main thread, default stream 0 unless noted):
  - take the next batch from the DataLoader thread and make the default stream
    wait for it (cuStreamWaitEvent on the loader's event);
  - cuMemAlloc_v2 an activation buffer, cuMemAllocAsync a workspace;
  - Model.forward: Linear layers (linear_fwd via cuLaunchKernel, relu_fwd via
    cuLaunchKernel_ptsz) and one Attention layer (attention_fwd via
    cuLaunchKernelEx), then loss_fwd and the loss value written to the loss
    buffer with cuMemsetD32Async;
  - Model.backward: linear_bwd_data, linear_bwd_weight (attention_bwd);
  - SGD.step: sgd_update per parameter, then cuMemsetD32Async zeroing grads;
  - cuMemFreeAsync the workspace, cuMemFree_v2 the activations;
  - every --sync-every steps, loss_item(): a 4-byte synchronous
    cuMemcpyDtoH_v2 of the loss buffer (the `.item()` host sync).
DataLoader thread ("prefetch"): own stream; per batch cuMemcpyHtoDAsync_v2 of
a pinned (cuMemAllocHost_v2) buffer, a `prefetch` kernel, cuEventRecord.
With --no-thread the same loading runs inline in the main thread.
Kernel durations (us) are passed as *(uint32_t *)kernelParams[0].

Options: --steps N (20), --layers N (4), --sync-every N (5), --threads /
--no-thread, --truth FILE, --pause-before-cuda SECONDS, --wait-file PATH,
--until-file PATH, --hold-file PATH, --fork-child, --expect-fail, --lib PATH
(default libcuda.so.1 via the loader path, falling back to libcuda.so).

--truth FILE writes a JSON list, one object per driver call, in call order:
  {"name": exact exported symbol, "pid": int, "tid": kernel thread id,
   "t0_ns"/"t1_ns": CLOCK_MONOTONIC ns just before/after the call,
   "ret": CUresult, "args": {...}}
args by kind (handles are ints; 0 = default stream or a NULL/failed handle):
  launches  kernel, func, grid [x,y,z], block [x,y,z], shared_mem, stream,
            duration_us
  copies    bytes, kind ("HtoD"/"DtoH"/...), stream (async ones), dst, src
  memsets   bytes, stream (async ones), ptr, value
  allocs    bytes, ptr (returned address), stream (async ones)
  frees     ptr, stream (async ones)
  syncs     stream and/or event
  set-up    cuInit flags; cuModuleGetFunction kernel + func; cuStreamCreate
            stream; cuEventCreate event; ...
The truth of processes started by --fork-child goes to FILE.child<PID>, one
file per child process (the forked child and the exec'd one); a "{pid}" in
FILE is replaced by the writer's pid.  Exit status 0 on success; one summary
line goes to stderr.
"""

from __future__ import print_function

import argparse
import ctypes
import os
import queue
import struct
import subprocess
import sys
import threading
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "site-packages"))
from simcuda import CudaError, Driver, Kernel, gettid, now_ns  # noqa: E402,F401 (train.X for the tests)

# ------------------------------------------------------------------ model


class Kernels(object):
    NAMES = ("linear_fwd", "relu_fwd", "linear_bwd_data", "linear_bwd_weight",
             "attention_fwd", "attention_bwd", "loss_fwd", "sgd_update", "prefetch")

    def __init__(self, drv, module):
        for name in self.NAMES:
            setattr(self, name, Kernel(drv, module, name))


class Linear(object):
    """A dense layer: weight and bias on the device, kernels per pass."""

    def __init__(self, drv, kernels, index, hidden):
        self.drv = drv
        self.k = kernels
        self.index = index
        self.hidden = hidden
        self.weight = drv.mem_alloc(hidden * hidden * 4)
        self.bias = drv.mem_alloc(hidden * 4)
        self.grad = drv.mem_alloc(hidden * hidden * 4)
        init = (ctypes.c_float * hidden)(*([0.01 * (index + 1)] * hidden))
        drv.memcpy_htod(self.bias, ctypes.addressof(init), hidden * 4)

    def parameters(self):
        return [(self.weight, self.hidden * self.hidden), (self.bias, self.hidden)]

    def forward(self, x):
        self.drv.launch(self.k.linear_fwd, 400, grid=(self.hidden // 64, 8, 1),
                        block=(256, 1, 1), shared_mem=16384)
        # the activation runs through the per-thread default stream entry point
        self.drv.launch(self.k.relu_fwd, 100, grid=(self.hidden // 128, 1, 1),
                        block=(128, 1, 1), ptsz=True)
        return x

    def backward(self):
        self.drv.launch(self.k.linear_bwd_data, 450, grid=(self.hidden // 64, 8, 1),
                        block=(256, 1, 1), shared_mem=16384)
        self.drv.launch(self.k.linear_bwd_weight, 500, grid=(self.hidden // 64, 8, 1),
                        block=(256, 1, 1), shared_mem=32768)


class Attention(object):
    """A fused attention block launched with cuLaunchKernelEx."""

    def __init__(self, drv, kernels, hidden):
        self.drv = drv
        self.k = kernels
        self.hidden = hidden

    def parameters(self):
        return []

    def forward(self, x):
        self.drv.launch_ex(self.k.attention_fwd, 800, grid=(16, 8, 1),
                           block=(128, 1, 1), shared_mem=49152)
        return x

    def backward(self):
        self.drv.launch(self.k.attention_bwd, 1200, grid=(16, 8, 1),
                        block=(128, 1, 1), shared_mem=49152)


class Model(object):
    def __init__(self, drv, kernels, layers, hidden):
        self.drv = drv
        self.k = kernels
        self.layers = []
        for i in range(layers):
            self.layers.append(Linear(drv, kernels, i, hidden))
            if i == layers // 2 - 1 or layers == 1:
                self.layers.append(Attention(drv, kernels, hidden))
        self.loss_buf = drv.mem_alloc(256)

    def parameters(self):
        out = []
        for layer in self.layers:
            out.extend(layer.parameters())
        return out

    def forward(self, x, step):
        for layer in self.layers:
            x = layer.forward(x)
        self.drv.launch(self.k.loss_fwd, 50, grid=(1, 1, 1), block=(256, 1, 1))
        # the loss kernel's result: a deterministic decreasing loss value
        loss = 2.0 / (1.0 + 0.1 * step)
        bits = struct.unpack("<I", struct.pack("<f", loss))[0]
        self.drv.memset_d32_async(self.loss_buf, bits, 1)
        return loss

    def backward(self):
        for layer in reversed(self.layers):
            layer.backward()


class SGD(object):
    """Unfused optimizer: one sgd_update kernel per parameter tensor."""

    def __init__(self, drv, kernels, model):
        self.drv = drv
        self.k = kernels
        self.model = model

    def step(self):
        for ptr, count in self.model.parameters():
            self.drv.launch(self.k.sgd_update, 40, grid=(max(1, count // 65536), 1, 1),
                            block=(256, 1, 1))

    def zero_grad(self):
        for layer in self.model.layers:
            if isinstance(layer, Linear):
                self.drv.memset_d32_async(layer.grad, 0, layer.hidden * layer.hidden)


def loss_item(drv, model, expected):
    """`.item()`: a synchronous 4-byte DtoH copy of the loss (a host sync)."""
    out = ctypes.c_float(0.0)
    drv.memcpy_dtoh(ctypes.addressof(out), model.loss_buf, 4)  # ITEM_LINE: the .item() sync
    if not drv.expect_fail and abs(out.value - expected) > 1e-6:
        raise CudaError("loss read back %r, expected %r" % (out.value, expected))
    return out.value


# ------------------------------------------------------------------ data


class DataLoader(object):
    """Produces batches on its own stream; each batch is (buffer, event)."""

    DEPTH = 2  # batches prepared ahead

    def __init__(self, drv, kernels, batch_bytes, nbatches, threaded):
        self.drv = drv
        self.k = kernels
        self.batch_bytes = batch_bytes
        self.nbatches = nbatches
        self.threaded = threaded
        self.stream = drv.stream_create()
        self.pinned = drv.mem_alloc_host(batch_bytes)
        self.buffers = [drv.mem_alloc(batch_bytes) for _ in range(self.DEPTH + 2)]
        self.events = [drv.event_create() for _ in range(self.DEPTH + 2)]
        self.queue = queue.Queue(maxsize=self.DEPTH)
        self.thread = None
        self.produced = 0
        self.error = None

    def load_batch(self, i):
        """Host preprocessing, pinned upload, prefetch kernel, event."""
        time.sleep(0.0005)  # host-side decode/augment
        slot = i % len(self.buffers)
        self.drv.memcpy_htod_async(self.buffers[slot], self.pinned, self.batch_bytes,
                                   self.stream)
        self.drv.launch(self.k.prefetch, 200, grid=(8, 1, 1), block=(256, 1, 1),
                        stream=self.stream)
        self.drv.event_record(self.events[slot], self.stream)
        return self.buffers[slot], self.events[slot]

    def _run(self):
        try:
            for i in range(self.nbatches):
                self.queue.put(self.load_batch(i))
        except Exception as e:  # surfaced to the main thread by next()
            self.error = e
            self.queue.put(None)

    def start(self):
        if self.threaded:
            self.thread = threading.Thread(target=self._run, name="prefetch")
            self.thread.daemon = True
            self.thread.start()

    def next(self):
        if not self.threaded:
            batch = self.load_batch(self.produced)
        else:
            batch = self.queue.get()
            if batch is None:
                raise self.error
        self.produced += 1
        return batch

    def close(self):
        if self.thread:
            self.thread.join()
        self.drv.stream_synchronize(self.stream)
        for e in self.events:
            self.drv.event_destroy(e)
        for b in self.buffers:
            self.drv.mem_free(b)
        self.drv.mem_free_host(self.pinned)
        self.drv.stream_destroy(self.stream)


# ------------------------------------------------------------------ loop


def train_step(drv, model, opt, loader, step, opts):
    batch, ready = loader.next()
    drv.stream_wait_event(0, ready)
    activations = drv.mem_alloc(opts.hidden * 64 * 4)
    workspace = drv.mem_alloc_async(1 << 16, 0)
    loss = model.forward(batch, step)
    model.backward()
    opt.step()
    opt.zero_grad()
    drv.mem_free_async(workspace, 0)
    drv.mem_free(activations)
    if (step + 1) % opts.sync_every == 0:
        loss_item(drv, model, loss)
    return loss


def run(drv, opts, steps, threaded, fork_hook=None, until_file=None):
    """Set up, run `steps` steps (then on until `until_file` exists), tear
    down.  Returns (loss, gpu_ms, steps run)."""
    drv.init()
    module = drv.load_module()
    kernels = Kernels(drv, module)
    model = Model(drv, kernels, opts.layers, opts.hidden)
    opt = SGD(drv, kernels, model)
    loader = DataLoader(drv, kernels, opts.batch_bytes, steps, threaded)
    start, end = drv.event_create(), drv.event_create()
    drv.ctx_synchronize()
    if fork_hook:
        fork_hook()
    loader.start()
    drv.event_record(start, 0)
    loss = 0.0
    step = 0
    while step < steps or (until_file and not os.path.exists(until_file)):
        loss = train_step(drv, model, opt, loader, step, opts)
        step += 1
    drv.event_record(end, 0)
    loss = loss_item(drv, model, loss)
    drv.event_synchronize(end)
    gpu_ms = drv.event_elapsed_ms(start, end)
    loader.close()
    drv.ctx_synchronize()
    for layer in model.layers:
        if isinstance(layer, Linear):
            drv.mem_free(layer.weight)
            drv.mem_free(layer.bias)
            drv.mem_free(layer.grad)
    drv.mem_free(model.loss_buf)
    drv.event_destroy(start)
    drv.event_destroy(end)
    return loss, gpu_ms, step


# ------------------------------------------------------------------ children


def child_truth_path(truth, pid):
    return "%s.child%d" % (truth, pid) if truth else None


def fork_child(drv, opts):
    """os.fork() a child that runs 2 steps (its own cuInit) and exits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # multi-threaded fork
        pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        with drv.lock:
            drv.calls = []
        run(drv, opts, 2, False)
    except Exception as e:
        sys.stderr.write("train.py: forked child: %s\n" % e)
        code = 1
    if opts.truth:
        drv.write_truth(child_truth_path(opts.truth, os.getpid()))
    sys.stderr.write("train.py: forked child pid %d steps 2 calls %d\n"
                     % (os.getpid(), len(drv.calls)))
    sys.stderr.flush()
    os._exit(code)


def spawn_child(opts):
    """Start a second workload process through exec."""
    cmd = [sys.executable, os.path.abspath(__file__), "--steps", "2", "--no-thread",
           "--layers", str(opts.layers)]
    if opts.truth:
        cmd += ["--truth", opts.truth + ".child{pid}"]
    if opts.lib:
        cmd += ["--lib", opts.lib]
    if opts.expect_fail:
        cmd += ["--expect-fail"]
    return subprocess.Popen(cmd)


# ------------------------------------------------------------------ main


def parse_args(argv):
    p = argparse.ArgumentParser(description="training-loop-shaped CUDA driver workload")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=512, help="layer width")
    p.add_argument("--batch-bytes", type=int, default=256 * 1024)
    p.add_argument("--sync-every", type=int, default=5)
    p.add_argument("--threads", dest="threads", action="store_true", default=True,
                   help="load data in a second thread (default)")
    p.add_argument("--no-thread", "--no-threads", dest="threads", action="store_false")
    p.add_argument("--truth", metavar="FILE")
    p.add_argument("--pause-before-cuda", type=float, default=0.0, metavar="SECONDS")
    p.add_argument("--wait-file", metavar="PATH")
    p.add_argument("--until-file", metavar="PATH",
                   help="after --steps steps, step on until PATH exists (with --no-thread)")
    p.add_argument("--hold-file", metavar="PATH",
                   help="once the steps are done, wait for PATH to exist before exiting")
    p.add_argument("--fork-child", action="store_true")
    p.add_argument("--expect-fail", action="store_true")
    p.add_argument("--lib", metavar="PATH")
    opts = p.parse_args(argv)
    if opts.steps < 0 or opts.layers < 1 or opts.sync_every < 1 or opts.hidden < 128:
        p.error("bad --steps/--layers/--sync-every/--hidden")
    if opts.until_file and opts.threads:
        p.error("--until-file needs --no-thread (the loader thread loads --steps batches)")
    return opts


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.time()
    if opts.pause_before_cuda > 0:
        time.sleep(opts.pause_before_cuda)
    drv = Driver(opts.lib, opts.expect_fail)
    children = []

    def before_loop():
        if opts.wait_file:
            while not os.path.exists(opts.wait_file):
                time.sleep(0.01)
        if opts.fork_child:
            children.append(fork_child(drv, opts))
            children.append(spawn_child(opts))

    status = 0
    loss, gpu_ms, steps = 0.0, 0.0, opts.steps
    try:
        loss, gpu_ms, steps = run(drv, opts, opts.steps, opts.threads, before_loop,
                                  opts.until_file)
    except CudaError as e:
        sys.stderr.write("train.py: %s\n" % e)
        status = 1
    for child in children:
        if isinstance(child, int):
            rc = os.waitpid(child, 0)[1]
            rc = os.WEXITSTATUS(rc) if os.WIFEXITED(rc) else 1
        else:
            rc = child.wait()
        if rc != 0:
            sys.stderr.write("train.py: child exited with %d\n" % rc)
            status = 1
    if opts.hold_file:
        while not os.path.exists(opts.hold_file):
            time.sleep(0.01)
    if opts.truth:
        drv.write_truth(opts.truth)
    failed = sum(1 for c in drv.calls if c["ret"] != 0)
    sys.stderr.write("train.py: pid %d steps %d layers %d calls %d failed %d loss %.4f "
                     "gpu %.1f ms wall %.1f ms\n"
                     % (os.getpid(), steps, opts.layers, len(drv.calls), failed,
                        loss, gpu_ms, (time.time() - t0) * 1000))
    return status


if __name__ == "__main__":
    sys.exit(main())
