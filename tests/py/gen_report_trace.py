#!/usr/bin/env python3
"""Synthetic gpubpf traces with a known schedule, for `gpubpf report`.

    gen_report_trace.py known OUT.json     the schedule below (exact figures)
    gen_report_trace.py loop OUT.json      a training loop's anatomy (see loop())
    gen_report_trace.py workers OUT.json   the same loop, its forward and backward
                                           launched by a worker (see workers())
    gen_report_trace.py states OUT.json    host-bound gaps and the launching
                                           thread's states (see states())
    gen_report_trace.py gc OUT.json        host-bound gaps spent collecting
                                           garbage (see gc_states())
    gen_report_trace.py shortsync OUT.json a long gap after a short sync (see
                                           short_sync())
    gen_report_trace.py mixedsync OUT.json one line making two kinds of sync
                                           (see mixed_sync())
    gen_report_trace.py longgap OUT.json   a launch-bound stream with one long
                                           gap (see long_gap())
    gen_report_trace.py big OUT.json N     about N events of a steady training
                                           loop with stacks (benchmark)

Times are microseconds.  "known" holds two processes:
pid 100 (device 0, compute stream 7, comm stream 13):
  kernels gemm 10-110, gemm 110-210, relu 305-355, gemm 355-455, relu 610-660,
  nccl 660-760 (stream 7), gemm 760-860, nccl 780-880 (stream 13),
  memcpy 900-950 (launched at 870, before the gap), memset 1000-1010;
  cuStreamSynchronize 60-212 at step (/home/u/train.py:42);
  so busy 680 of a 1000 span; idle: sync-bound 90, host-bound 155, other 75;
  memory: alloc 1000 @1, allocAsync 3000 @20, free 0x1000 @400, alloc 500 @500,
  cuMemCreate 2000 @520 (peak 5500 at 521, step (/home/u/train.py:46)),
  cuMemRelease @900; host and failed allocations are ignored.
pid 200: 3 set-up launches then 10 steps of A B C C D (kernels of 10 us, 100 us
  apart, launched late: a launch-bound stream); step starts 1000 us apart
  except the 5th step, 1500 us; with python stacks.
"""
import json
import sys

LIB = "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py"


def meta(pid, name):
    return {"ph": "M", "name": "process_name", "pid": pid, "tid": pid, "args": {"name": name}}


def api(pid, name, ts, dur=0.0, tid=None, stack=None, **args):
    a = dict(args)
    if stack is not None:
        a["stack"] = stack
    return {"ph": "X", "cat": "cuda_api", "name": name, "pid": pid, "tid": tid or pid,
            "ts": ts, "dur": dur, "args": a}


def gpu(pid, cat, name, ts, dur, stream, corr, device=0, **args):
    a = {"device": device, "stream": stream, "correlation": corr}
    a.update(args)
    return {"ph": "X", "cat": cat, "name": name, "pid": pid,
            "tid": 0x40000000 + (device << 20) + stream, "ts": ts, "dur": dur, "args": a}


def stack(*user):
    return ["Module._call_impl (%s:1520)" % LIB] + list(user) + \
        ["<module> (/home/u/train.py:99)", "_run_code (<frozen runpy>:88)"]


def known():
    ev = [meta(100, "train"), meta(200, "loop")]
    p = 100
    launches = [  # (launch ts, corr, cat, name, start, dur, stream)
        (0, 1, "kernel", "gemm", 10, 100, 7),
        (50, 2, "kernel", "gemm", 110, 100, 7),
        (300, 3, "kernel", "relu", 305, 50, 7),
        (340, 4, "kernel", "gemm", 355, 100, 7),
        (600, 5, "kernel", "relu", 610, 50, 7),
        (650, 6, "nccl", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 660, 100, 7),
        (700, 7, "kernel", "gemm", 760, 100, 7),
        (705, 8, "nccl", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 780, 100, 13),
        (870, 9, "gpu_memcpy", "Memcpy HtoD", 900, 50, 7),
        (960, 10, "gpu_memset", "Memset", 1000, 10, 7),
    ]
    for lts, corr, cat, name, start, dur, stream in launches:
        call = {"kernel": "cuLaunchKernel", "nccl": "cuLaunchKernel",
                "gpu_memcpy": "cuMemcpyHtoDAsync_v2", "gpu_memset": "cuMemsetD32Async"}[cat]
        a = {"correlation": corr}
        if cat in ("kernel", "nccl"):
            a["kernel"] = name
        ev.append(api(p, call, lts, 0.0, stack=stack("step (/home/u/train.py:41)"), **a))
        ev.append(gpu(p, cat, name, start, dur, stream, corr))
    ev.append(api(p, "cuStreamSynchronize", 60, 152, stream="0x0", ret=0,
                  stack=["Tensor.item (/usr/lib/python3/dist-packages/torch/_tensor.py:100)",
                         "step (/home/u/train.py:42)", "<module> (/home/u/train.py:99)"]))
    ev.append(api(p, "cuMemAlloc_v2", 1, 1, bytes=1000, ptr="0x1000", ret=0,
                  stack=stack("Model.__init__ (/home/u/model.py:10)")))
    ev.append(api(p, "cuMemAllocAsync", 20, 1, bytes=3000, ptr="0x5000", ret=0,
                  stack=stack("step (/home/u/train.py:40)")))
    ev.append(api(p, "cuMemFree_v2", 400, 1, ptr="0x1000", ret=0))
    ev.append(api(p, "cuMemAlloc_v2", 500, 1, bytes=500, ptr="0x1000", ret=0,
                  stack=stack("step (/home/u/train.py:45)")))
    ev.append(api(p, "cuMemCreate", 520, 1, bytes=2000, handle="0x77", ret=0,
                  stack=stack("step (/home/u/train.py:46)")))
    ev.append(api(p, "cuMemRelease", 900, 1, handle="0x77", ret=0))
    ev.append(api(p, "cuMemAllocHost_v2", 30, 1, bytes=10 ** 9, ptr="0x9000000", ret=0))
    ev.append(api(p, "cuMemAlloc_v2", 31, 1, bytes=10 ** 9, ptr="0x0", ret=2))
    # pid 200: iterations
    q = 200
    corr = 0
    t = 5000.0
    for i, k in enumerate(("init_a", "init_b", "init_c")):
        corr += 1
        ev.append(api(q, "cuLaunchKernel", t + 10 * i, kernel=k, correlation=corr,
                      stack=stack("setup (/home/u/loop.py:5)")))
        ev.append(gpu(q, "kernel", k, t + 10 * i + 5, 2, 1, corr))
    t = 6000.0
    for s in range(10):
        for j, k in enumerate(("A", "B", "C", "C", "D")):
            corr += 1
            site = "Net.forward (/home/u/loop.py:%d)" % (20 + j)
            ev.append(api(q, "cuLaunchKernel", t + 100 * j, kernel=k, correlation=corr,
                          stack=stack(site, "train_step (/home/u/loop.py:30)")))
            ev.append(gpu(q, "kernel", k, t + 100 * j + 5, 10, 1, corr))
        t += 1500 if s == 4 else 1000
    ev.sort(key=lambda e: e.get("ts", -1))
    return ev


def loop():
    """pid 300, a loop in train() (/home/u/t.py), 10 iterations 1000 us apart
    except after the 4th (1400: a slow collate).  At offsets (us) in each:
      line 11 load_batch: normalize launch at 0 (GPU 20 us)
      line 12 Model.forward: 4 x gemm from one line, at 100, 150, 200, 250 (GPU 40 each)
      line 13 Model.backward: 2 x gemm_bwd at 400, 450 (GPU 80 each)
      line 14 SGD.step: sgd at 600 (GPU 30)
      line 15 .item(): cuMemcpyDtoH_v2 700-800 (GPU 5), under library code only
      line 16 Detector.postprocess: reshape at 810 (GPU 100): a wasted tail
      a call without a stack at 850-870: outside any phase
    Every call lasts 10 us but the copy.  So 9 steps, each starting at the
    normalize launch; host time per step: load 10 + 130 (the time after the
    last call; 530 in the slow step), forward 250, backward 200, sgd 150,
    Tensor.item 190, postprocess 20, outside 50.  Wasted work (after
    SGD.step, every step): reshape 9 x 100 us, the .item() copy 9 x 5."""
    p = 300
    ev = [meta(p, "loop")]
    corr = 0
    t = 10000.0

    def st(line, *under):
        return list(reversed(under)) + ["train (/home/u/t.py:%d)" % line, "<module> (/home/u/t.py:90)"]

    def launch(ts, kernel, dur, stack, gpu_at=10):
        nonlocal corr
        corr += 1
        ev.append(api(p, "cuLaunchKernel", ts, 10, kernel=kernel, correlation=corr, stack=stack))
        ev.append(gpu(p, "kernel", kernel, ts + gpu_at, dur, 7, corr))

    for i in range(10):
        launch(t, "normalize", 20, st(11, "load_batch (/home/u/data.py:5)"))
        for k in range(4):
            launch(t + 100 + 50 * k, "gemm", 40,
                   st(12, "Model.forward (/home/u/model.py:20)", "Layer.forward (/home/u/model.py:8)"))
        for k in range(2):
            launch(t + 400 + 50 * k, "gemm_bwd", 80, st(13, "Model.backward (/home/u/model.py:30)"))
        launch(t + 600, "sgd", 30, st(14, "SGD.step (/home/u/optim.py:3)"))
        corr += 1
        ev.append(api(p, "cuMemcpyDtoH_v2", t + 700, 100, bytes=4, correlation=corr,
                      stack=["Tensor.item (%s:7)" % LIB] + st(15)))
        ev.append(gpu(p, "gpu_memcpy", "Memcpy DtoH", t + 790, 5, 7, corr))
        launch(t + 810, "reshape", 100, st(16, "Detector.postprocess (/home/u/model.py:50)"))
        ev.append(api(p, "cuEventRecord", t + 850, 20))
        t += 1400 if i == 3 else 1000
    ev += nested_loop()
    ev.sort(key=lambda e: e.get("ts", -1))
    return ev


def line_loop(p, lines, frame, outer):
    """10 iterations 1000 us apart of pid p's loop: each line (line, kernel,
    the frames under it, outermost first) of lines, the k-th, launches its
    kernel at 100 k us (10 us, GPU 40 us 10 us later, stream 7), its stack
    those frames under frame % line under outer (innermost first)."""
    ev = []
    corr = 0
    for i in range(10):
        t = 10000.0 + 1000 * i
        for k, (line, kernel, under) in enumerate(lines):
            corr += 1
            stack = list(reversed(under)) + [frame % line] + outer
            ev.append(api(p, "cuLaunchKernel", t + 100 * k, 10, kernel=kernel, correlation=corr,
                          stack=stack))
            ev.append(gpu(p, "kernel", kernel, t + 100 * k + 10, 40, 7, corr))
    return ev


def torch_loop():
    """pid 310, a loop in train() (/home/u/t.py), 10 iterations 1000 us
    apart, its calls under the library frames PyTorch 2's put between a
    line and the code it runs (torch in TORCH).  At offsets (us) in each:
      line 21 out = model(x): Module._wrapped_call_impl, Module._call_impl,
              then Net.forward (/home/u/net.py:10): gemm at 0 (GPU 40)
      line 22 loss = criterion(out, y): the same two, then
              CrossEntropyLoss.forward and cross_entropy (torch's): xent at 100
      line 23 loss.backward(): Tensor.backward, backward: gemm_bwd at 200
      line 24 opt.step(): Optimizer.profile_hook_step.<locals>.wrapper,
              _use_grad_for_differentiable.<locals>._use_grad, then SGD.step
              (TORCH/optim/sgd.py): sgd at 300
      line 25 opt.zero_grad(): _disable_dynamo.<locals>.inner, then
              Optimizer.zero_grad: zero at 400 (GPU work after the step,
              the optimizer's own)
    Each phase is named by the first frame under its line that does more
    than pass the call on; no wasted work."""
    p = 310
    torch = "/usr/lib/python3/dist-packages/torch"
    ev = [meta(p, "torchloop")]
    wrapped = ["Module._wrapped_call_impl (%s/nn/modules/module.py:1736)" % torch,
               "Module._call_impl (%s/nn/modules/module.py:1747)" % torch]
    lines = (
        (21, "gemm", wrapped + ["Net.forward (/home/u/net.py:10)"]),
        (22, "xent", wrapped + ["CrossEntropyLoss.forward (%s/nn/modules/loss.py:1293)" % torch,
                                "cross_entropy (%s/nn/functional.py:3479)" % torch]),
        (23, "gemm_bwd", ["Tensor.backward (%s/_tensor.py:581)" % torch,
                          "backward (%s/autograd/__init__.py:347)" % torch]),
        (24, "sgd", ["Optimizer.profile_hook_step.<locals>.wrapper (%s/optim/optimizer.py:487)" % torch,
                     "_use_grad_for_differentiable.<locals>._use_grad (%s/optim/optimizer.py:91)" % torch,
                     "SGD.step (%s/optim/sgd.py:125)" % torch]),
        (25, "zero", ["_disable_dynamo.<locals>.inner (%s/_compile.py:32)" % torch,
                      "Optimizer.zero_grad (%s/optim/optimizer.py:955)" % torch]))
    return ev + line_loop(p, lines, "train (/home/u/t.py:%d)", ["<module> (/home/u/t.py:90)"])


def trainer_loop():
    """pid 330, a loop that library code runs: one line of user code,
    main (/home/u/ft.py:25), calls Trainer.train (TF, transformers'),
    whose _inner_training_loop makes 10 iterations 1000 us apart.  At
    offsets (us) in each, its lines:
      2550 Trainer._prepare_inputs, _prepare_input, BatchEncoding.to: prep
           at 0 (GPU 40; a private method doing work of its own names
           its phase)
      2555 Trainer.training_step, then the user's MyTrainer.compute_loss
           (/home/u/ft.py:12): gemm at 100
      2600 Accelerator.clip_grad_norm_: norm at 200
      2620 AcceleratedOptimizer.step (accelerate's), under it torch's
           hooks and AdamW.step: adamw at 300
      2640 Module.zero_grad: zero at 400
      2660 Trainer._maybe_log_save_evaluate (line 3100): a 20 us
           cuMemcpyDtoH_v2 at 500 (the logged loss's .item())
    and before the loop, at 9000, main (/home/u/ft.py:20) copies the model
    in (cuMemcpyHtoD_v2, 50 us).  No loop among the user frames: the loop
    is _inner_training_loop's, 9 steps, its phases by what each line
    calls; no wasted work.  In the loop, a call with no user frame under
    the loop's line has its innermost frame as its site (BatchEncoding.to,
    _maybe_log_save_evaluate), and one with a user frame there that frame
    (compute_loss); main's copy keeps line 20."""
    p = 330
    tf = "/usr/lib/python3/dist-packages/transformers/trainer.py"
    torch = "/usr/lib/python3/dist-packages/torch"
    ev = [meta(p, "trainer")]
    lines = (
        (2550, "prep", ["Trainer._prepare_inputs (%s:3500)" % tf,
                        "Trainer._prepare_input (%s:3480)" % tf,
                        "BatchEncoding.to (/usr/lib/python3/dist-packages/transformers/"
                        "tokenization_utils_base.py:800)"]),
        (2555, "gemm", ["Trainer.training_step (%s:3700)" % tf,
                        "MyTrainer.compute_loss (/home/u/ft.py:12)"]),
        (2600, "norm", ["Accelerator.clip_grad_norm_ (/usr/lib/python3/dist-packages/accelerate/"
                        "accelerator.py:2300)"]),
        (2620, "adamw", ["AcceleratedOptimizer.step (/usr/lib/python3/dist-packages/accelerate/"
                         "optimizer.py:170)",
                         "Optimizer.profile_hook_step.<locals>.wrapper (%s/optim/optimizer.py:487)"
                         % torch,
                         "AdamW.step (%s/optim/adamw.py:200)" % torch]),
        (2640, "zero", ["Module.zero_grad (%s/nn/modules/module.py:2600)" % torch]))
    outer = ["Trainer.train (%s:2240)" % tf, "main (/home/u/ft.py:25)",
             "<module> (/home/u/ft.py:30)"]
    ev.append(api(p, "cuMemcpyHtoD_v2", 9000.0, 50, stack=["main (/home/u/ft.py:20)",
                                                            "<module> (/home/u/ft.py:30)"]))
    for i in range(10):
        ev.append(api(p, "cuMemcpyDtoH_v2", 10500.0 + 1000 * i, 20,
                      stack=["Trainer._maybe_log_save_evaluate (%s:3100)" % tf,
                             "Trainer._inner_training_loop (%s:2660)" % tf] + outer))
    return ev + line_loop(p, lines, "Trainer._inner_training_loop (" + tf + ":%d)", outer)


def repeats():
    """pid 320, a loop in train() (/home/u/t.py), 10 iterations 1000 us
    apart (so 9 steps, each starting at the normalize launch), kernels with
    their grid, block and argument hash.  At offsets (us) in each:
      line 11 load_batch: normalize at 0 (GPU 20), arguments new each step
      line 12 Model.forward: 3 x gemm at 100, 150, 200 (GPU 40), each on its
              own arguments (the same every step, as a real model's)
      line 13 Model.loss: softmax at 400 (GPU 50), arguments S
      line 14 Metrics.compute: softmax at 500 (GPU 50), arguments S again,
              same grid: a repeat, in every step
      line 15 Metrics.compute: softmax at 600 on S with another grid: not one
      line 16 relu twice at 700, 750, arguments not known: not repeats
      line 17 dropout twice at 800, 850 on the same arguments, in the first
              3 iterations only: under half of the steps, not kept
    So one repeated_work finding: softmax at Metrics.compute
    (/home/u/metrics.py:7), 9 repeats, 9 x 50 us."""
    p = 320
    ev = [meta(p, "repeats")]
    corr = 0
    t = 10000.0

    def st(line, *under):
        return list(reversed(under)) + ["train (/home/u/t.py:%d)" % line, "<module> (/home/u/t.py:90)"]

    def launch(ts, kernel, dur, stack, h=None, grid=(64, 1, 1)):
        nonlocal corr
        corr += 1
        ev.append(api(p, "cuLaunchKernel", ts, 10, kernel=kernel, correlation=corr, stack=stack))
        extra = {"grid": list(grid), "block": [128, 1, 1], "shared_mem": 0}
        if h is not None:
            extra["args_hash"] = h
        ev.append(gpu(p, "kernel", kernel, ts + 10, dur, 7, corr, **extra))

    for i in range(10):
        launch(t, "normalize", 20, st(11, "load_batch (/home/u/data.py:5)"), h=1000 + i)
        for k in range(3):
            launch(t + 100 + 50 * k, "gemm", 40, st(12, "Model.forward (/home/u/model.py:20)"),
                   h=2000 + k)
        launch(t + 400, "softmax", 50, st(13, "Model.loss (/home/u/model.py:40)"), h=3000)
        launch(t + 500, "softmax", 50, st(14, "Metrics.compute (/home/u/metrics.py:7)"), h=3000)
        launch(t + 600, "softmax", 50, st(15, "Metrics.compute (/home/u/metrics.py:9)"), h=3000,
               grid=(32, 1, 1))
        for k in range(2):
            launch(t + 700 + 50 * k, "relu", 10, st(16))
        if i < 3:
            for k in range(2):
                launch(t + 800 + 50 * k, "dropout", 10, st(17), h=4000)
        t += 1000
    ev.sort(key=lambda e: e.get("ts", -1))
    return ev


def loop_samples():
    """pid 304: loop()'s pid 300 (its nested loop left out), with thread
    states and CPU samples of its thread.  In each step: running
    throughout but [560, 580) (io, blocked under Model.backward on line
    13); samples at 500 under Model.backward (line 13) and at 550 under
    SGD.step (line 14), both in the gap [460, 600) before sgd's launch;
    samples at 900 (and in the slow step also at 1000, 1100, 1200, 1300)
    under DataLoader.__next__ on line 10, a line that makes no call, in the
    step's tail [870, next step).  So the gap's 120 us of running go 60 to
    backward and 60 to sgd, its 20 us of io to backward (the line it
    blocked in); the tail's 130 us (530 in the slow step) to the data
    loading line.  Host time per step: data 130 (530), load 10, forward
    250, backward 280, sgd 70, Tensor.item 190, postprocess 20, outside
    50."""
    p = 304
    ev = [dict(e, pid=p, tid=p) if e.get("tid") == 300 else dict(e, pid=p)
          for e in loop() if e.get("pid") == 300]
    ev[0]["args"] = {"name": "loop_samples"}

    def st(line, *under):
        return list(reversed(under)) + ["train (/home/u/t.py:%d)" % line, "<module> (/home/u/t.py:90)"]

    starts = [e["ts"] for e in ev if e.get("args", {}).get("kernel") == "normalize"]
    starts.append(starts[-1] + 1000)
    for i, t in enumerate(starts[:-1]):
        nxt = starts[i + 1]
        ev.append(state(p, p, "running", t, 560))
        ev.append(state(p, p, "io", t + 560, 20, syscall="read",
                        stack=st(13, "Model.backward (/home/u/model.py:32)")))
        ev.append(state(p, p, "running", t + 580, nxt - t - 580))
        for ts, frames in ((t + 500, st(13, "Model.backward (/home/u/model.py:31)")),
                           (t + 550, st(14, "SGD.step (/home/u/optim.py:4)"))):
            ev.append(dict(sample(p, p, ts, None), name=frames[0].split(" (")[0],
                           args={"cpu": 0, "stack": frames}))
        for ts in range(int(t) + 900, int(nxt), 100):
            frames = st(10, "DataLoader.__next__ (/home/u/data.py:40)")
            ev.append(dict(sample(p, p, ts, None), name="DataLoader.__next__",
                           args={"cpu": 0, "stack": frames}))
    ev.sort(key=lambda e: e.get("ts", -1))
    return ev


def workers():
    """pid 302: loop()'s pid 300, but a worker thread without Python, 303,
    launches the forward and backward kernels (lines 12 and 13: 6 a step,
    against the Python thread's 3), with the Python thread's stacks
    attributed (stack_attributed, stack_thread 302).  The report must find
    the same steps and anatomy on thread 302 as loop() gives pid 300."""
    ev = []
    for e in loop():
        if e["pid"] != 300:
            continue
        e = json.loads(json.dumps(e))
        e["pid"] = 302
        if e.get("tid") == 300:
            e["tid"] = 302
        st = e.get("args", {}).get("stack", [])
        if e.get("cat") == "cuda_api" and any(":12)" in f or ":13)" in f for f in st if f.startswith("train ")):
            e["tid"] = 303
            e["args"]["stack_attributed"] = True
            e["args"]["stack_thread"] = 302
        ev.append(e)
    return ev


def nested_loop():
    """pid 301: run() (/home/u/r.py) sets up (line 5: 2 launches), calls
    train_step() on line 6 six times, 500 us apart (line 20: 2 x f, line 21:
    b), then tears down (lines 8 and 9: 4 x 2 frees, a repeating pattern of
    its own).  The loop is train_step(): 5 steps of 3 launches."""
    p = 301
    ev = [meta(p, "nested")]
    corr = 0

    def st(*frames):
        return list(reversed(frames)) + ["<module> (/home/u/r.py:99)"]

    def launch(ts, kernel, stack):
        nonlocal corr
        corr += 1
        ev.append(api(p, "cuLaunchKernel", ts, 5, kernel=kernel, correlation=corr, stack=stack))
        ev.append(gpu(p, "kernel", kernel, ts + 10, 20, 7, corr))

    for k in range(2):
        launch(100 + 50 * k, "init", st("run (/home/u/r.py:5)", "Model.__init__ (/home/u/r.py:40)"))
    t = 1000.0
    for i in range(6):
        for k in range(2):
            launch(t + 50 * k, "f", st("run (/home/u/r.py:6)", "train_step (/home/u/r.py:20)"))
        launch(t + 200, "b", st("run (/home/u/r.py:6)", "train_step (/home/u/r.py:21)"))
        t += 500
    for k in range(4):
        for line in (8, 9):
            ev.append(api(p, "cuMemFree_v2", t, 2, ptr="0x%x" % (0x1000 * (k + 1)), ret=0,
                          stack=st("run (/home/u/r.py:%d)" % line)))
            t += 10
    return ev


def state(pid, tid, name, ts, dur, **args):
    a = dict(args, state=name)
    return {"ph": "X", "cat": "thread_state", "name": name, "pid": pid, "tid": 0x20000000 + tid,
            "ts": ts, "dur": dur, "args": a}


def sample(pid, tid, ts, site, gc=False):
    args = {"cpu": 0}
    if site:
        args["stack"] = stack(site)
    if gc:
        args["gc"] = True
    return {"ph": "i", "cat": "sample", "name": site.split(" (")[0] if site else "sample",
            "pid": pid, "tid": 0x20000000 + tid, "ts": ts, "s": "t", "args": args}


def states():
    """pid 400, thread 400 launches gemm at 0 (runs 10-110), 400 (410-510),
    700 (705-805) and 1000 (1000-1100), from step (/home/u/train.py:40..43):
    host-bound gaps [110, 400), [510, 700), [805, 1000): 675 us.  Thread
    400: running 0-200 (samples: collate at 120, log_metrics at 180),
    gil_wait 200-310 (held by 401), io (read) 310-350, runnable 350-390,
    running 390-600 (sample: collate at 550), sleep 600-650, lock_wait
    (futex) 650-700, running 700-820, nothing 820-900, other_wait 900-1100.
    Thread 401 runs throughout, sampled at 560.  So, costliest first (us):
    other :43 180 (80 with no state), running collate 135 (45 + 90),
    gil_wait :41 110, lock_wait :42 50, sleep :42 50, running log_metrics
    45, runnable :41 40, io :41 40, running :43 15, running :41 10."""
    p = 400
    ev = [meta(p, "states")]
    for corr, lts, start in ((1, 0, 10), (2, 400, 410), (3, 700, 705), (4, 1000, 1000)):
        ev.append(api(p, "cuLaunchKernel", lts, kernel="gemm", correlation=corr,
                      stack=stack("step (/home/u/train.py:%d)" % (39 + corr))))
        ev.append(gpu(p, "kernel", "gemm", start, 100, 7, corr))
    for name, ts, end, args in (("running", 0, 200, {}), ("gil_wait", 200, 310, {"holder_tid": 401}),
                                ("io", 310, 350, {"syscall": "read"}), ("runnable", 350, 390, {}),
                                ("running", 390, 600, {}), ("sleep", 600, 650, {"syscall": "nanosleep"}),
                                ("lock_wait", 650, 700, {"syscall": "futex"}),
                                ("running", 700, 820, {}), ("other_wait", 900, 1100, {})):
        ev.append(state(p, p, name, ts, end - ts, **args))
    ev.append(state(p, 401, "running", 0, 1100))
    ev += [sample(p, p, 120, "collate (/home/u/data.py:7)"),
           sample(p, p, 180, "log_metrics (/home/u/train.py:30)"),
           sample(p, p, 550, "collate (/home/u/data.py:7)"),
           sample(p, 401, 560, "busy (/home/u/worker.py:3)")]
    ev.sort(key=lambda e: e.get("ts", -1))
    return ev


def gc_states():
    """pid 410, thread 410 launches gemm at 0 (runs 10-110), 400 (410-510)
    and 700 (705-805), from step (/home/u/train.py:51): host-bound gaps
    [110, 400) and [510, 700), 480 us, the thread running throughout.
    Samples: in the first gap two in the garbage collector under step
    (:50) at 150 and 250, one in collate (data.py:7) at 350: a third each
    (96.666, 96.667, 96.667 us); in the second one in the collector under
    step (:50) at 600 and one in it without a stack at 650: 95 us each.
    So: gc :50 288.333 us, running collate 96.667, gc :51 (the launch's
    site) 95."""
    p = 410
    ev = [meta(p, "gc")]
    for corr, lts, start in ((1, 0, 10), (2, 400, 410), (3, 700, 705)):
        ev.append(api(p, "cuLaunchKernel", lts, kernel="gemm", correlation=corr,
                      stack=stack("step (/home/u/train.py:51)")))
        ev.append(gpu(p, "kernel", "gemm", start, 100, 7, corr))
    ev.append(state(p, p, "running", 0, 900))
    ev += [sample(p, p, 150, "step (/home/u/train.py:50)", gc=True),
           sample(p, p, 250, "step (/home/u/train.py:50)", gc=True),
           sample(p, p, 350, "collate (/home/u/data.py:7)"),
           sample(p, p, 600, "step (/home/u/train.py:50)", gc=True),
           sample(p, p, 650, None, gc=True)]
    ev.sort(key=lambda e: e.get("ts", -1))
    return ev


def big(n):
    ev = [meta(300, "big")]
    corr = 0
    t = 1000.0
    names = ["gemm_%d" % i for i in range(40)]
    s = 0
    while len(ev) < n:
        for j, k in enumerate(names):
            corr += 1
            site = "Block.forward (/home/u/model.py:%d)" % (100 + j)
            ev.append(api(300, "cuLaunchKernel", t, kernel=k, correlation=corr,
                          stack=stack(site, "train_step (/home/u/train.py:30)")))
            ev.append(gpu(300, "kernel", k, t + 8, 20, 7, corr))
            t += 25
        corr += 1
        ev.append(api(300, "cuMemAlloc_v2", t, 3, bytes=1 << 20, ptr=hex(0x10000000 + (s % 64) * (1 << 20)),
                      ret=0, stack=stack("train_step (/home/u/train.py:31)")))
        ev.append(api(300, "cuStreamSynchronize", t + 5, 30, stream="0x0", ret=0,
                      stack=stack("train_step (/home/u/train.py:32)")))
        ev.append(api(300, "cuMemFree_v2", t + 40, 2, ptr=hex(0x10000000 + (s % 64) * (1 << 20)), ret=0))
        t += 60
        s += 1
    return ev


def short_sync():
    """pid 500, device 0, stream 7: kernel k1 0-100 (launched at 0); a
    cuStreamSynchronize 90-101 at step (/home/u/s.py:5); then 4 ms of host
    work and k2, launched at 4101, runs 4105-4205.  The gap [100, 4105): the
    launch came at 4101, so 4001 us of it waited on the host, of which the
    sync, blocked 11 us, caused 11 (sync-bound) and the rest, 3990, is
    host-bound; 4 us of launch latency is other."""
    p = 500
    st = ["step (/home/u/s.py:5)", "<module> (/home/u/s.py:9)"]
    return [meta(p, "short"),
            api(p, "cuLaunchKernel", 0, kernel="k1", correlation=1, stack=st),
            gpu(p, "kernel", "k1", 0, 100, 7, 1),
            api(p, "cuStreamSynchronize", 90, 11, stream="0x0", ret=0, stack=st),
            api(p, "cuLaunchKernel", 4101, kernel="k2", correlation=2,
                stack=["step (/home/u/s.py:7)", "<module> (/home/u/s.py:9)"]),
            gpu(p, "kernel", "k2", 4105, 100, 7, 2)]


def mixed_sync():
    """pid 700, device 0, stream 7: one line, step (/home/u/m.py:5), makes
    two kinds of blocking call: cuMemcpyDtoH_v2 at 90 (20 us) and at 200
    (30 us), cuStreamSynchronize at 330 (10 us); kernels k1 0-100, k2
    115-215, k3 235-335, k4 345-445, launched from m.py:7 at 0 and as each
    blocking call returns.  Two hotspots at the line, one per call."""
    p = 700
    st = ["step (/home/u/m.py:5)", "<module> (/home/u/m.py:9)"]
    lst = ["step (/home/u/m.py:7)", "<module> (/home/u/m.py:9)"]
    ev = [meta(p, "mixed")]
    for i, (launch, start) in enumerate(((0, 0), (110, 115), (230, 235), (340, 345))):
        ev.append(api(p, "cuLaunchKernel", launch, kernel="k%d" % (i + 1), correlation=i + 1,
                      stack=lst))
        ev.append(gpu(p, "kernel", "k%d" % (i + 1), start, 100, 7, i + 1))
    ev.append(api(p, "cuMemcpyDtoH_v2", 90, 20, bytes=4, ret=0, stack=st))
    ev.append(api(p, "cuMemcpyDtoH_v2", 200, 30, bytes=4, ret=0, stack=st))
    ev.append(api(p, "cuStreamSynchronize", 330, 10, stream="0x0", ret=0, stack=st))
    return ev


def drained():
    """pid 800, device 0, stream 7: k1 runs 0-10000 (launched at 0), and the
    main thread blocks in cuStreamSynchronize 10-10010 at step
    (/home/u/d.py:20); k2, launched at 14990, runs 15000-15100.  Meanwhile
    thread 802 polls: 600 cuEventSynchronize of 1 us from 100 on (poll
    (/home/u/d.py:50)), the last ending after the main sync, and one of
    25 us at 9995-10020.  The gap [10000, 15000): the launch came at 14990,
    so 4990 us waited on the host, all of it sync-bound on the main sync (in
    progress at 10000, blocked 10 ms): it drained the queue; 10 us is
    other.  (A short poll that ended later took the gap, and a long sync
    with 512 syncs started after it was not seen.)"""
    p = 800
    main = ["step (/home/u/d.py:20)", "<module> (/home/u/d.py:30)"]
    poll = ["poll (/home/u/d.py:50)", "<module> (/home/u/d.py:31)"]
    ev = [meta(p, "drained"),
          api(p, "cuLaunchKernel", 0, kernel="k1", correlation=1, stack=main),
          gpu(p, "kernel", "k1", 0, 10000, 7, 1),
          api(p, "cuStreamSynchronize", 10, 10000, stream="0x0", ret=0, stack=main),
          api(p, "cuLaunchKernel", 14990, kernel="k2", correlation=2, stack=main),
          gpu(p, "kernel", "k2", 15000, 100, 7, 2),
          api(p, "cuEventSynchronize", 9995, 25, tid=802, ret=0, stack=poll)]
    for i in range(600):
        ev.append(api(p, "cuEventSynchronize", 100 + i * 16.5, 1, tid=802, ret=0, stack=poll))
    return ev


def setup_loop():
    """pid 900, no stacks: set-up launches A A A (at 100, 110, 120), then 10
    steps of A B C D 1000 us apart from 10000 (each kernel 10 us, 100 us
    after the one before), then a lone A 5 ms after the loop.  From the
    launch sequence: period 4, 9 steps of exactly 1 ms (the set-up A's and
    the lone one made steps of 0.01 to 9.88 ms of their own)."""
    p, corr, ev = 900, 0, [meta(900, "setup")]

    def k(name, ts):
        nonlocal corr
        corr += 1
        ev.append(api(p, "cuLaunchKernel", ts, kernel=name, correlation=corr))
        ev.append(gpu(p, "kernel", name, ts + 5, 10, 7, corr))
    for i in range(3):
        k("A", 100 + 10 * i)
    for step in range(10):
        for j, name in enumerate("ABCD"):
            k(name, 10000 + 1000 * step + 100 * j)
    k("A", 10000 + 1000 * 10 + 5000)
    return ev


def installed():
    """pid 800: short_sync's schedule, from a job installed in dist-packages
    and run with -m (python -m trainpkg): no frame of its stacks is user
    code.  The sync (90-101) at train_loop (PKG/loop.py:30); k1 launched at
    0 from the same line, k2 at 4101 from torch's Linear.forward
    (TORCH/nn/modules/linear.py:116) under train_loop (PKG/loop.py:28).
    Each stack's innermost frame that is not frozen is its site."""
    p = 800
    pkg = "/usr/local/lib/python3.11/dist-packages/trainpkg"
    torch = "/usr/local/lib/python3.11/dist-packages/torch"
    outer = ["main (%s/__main__.py:5)" % pkg, "_run_code (<frozen runpy>:88)",
             "_run_module_as_main (<frozen runpy>:198)"]
    st = ["train_loop (%s/loop.py:30)" % pkg] + outer
    lst = ["Linear.forward (%s/nn/modules/linear.py:116)" % torch,
           "Module._call_impl (%s/nn/modules/module.py:1520)" % torch,
           "train_loop (%s/loop.py:28)" % pkg] + outer
    return [meta(p, "installed"),
            api(p, "cuLaunchKernel", 0, kernel="k1", correlation=1, stack=st),
            gpu(p, "kernel", "k1", 0, 100, 7, 1),
            api(p, "cuStreamSynchronize", 90, 11, stream="0x0", ret=0, stack=st),
            api(p, "cuLaunchKernel", 4101, kernel="k2", correlation=2, stack=lst),
            gpu(p, "kernel", "k2", 4105, 100, 7, 2)]


def loader():
    """pid 900, device 0, stream 3: a data loader's stream: 10 kernels of
    100 us, kernel i launched at 2100 i from load (/home/u/d.py:4) and run
    5 us after its launch.  Its kernels are 2000 us apart, more than a
    launch costs: not launch-bound, though each next launch comes late.
    Host-bound: 9 gaps of 1995 us, a host_bound finding at the line."""
    p = 900
    ev = [meta(p, "loader")]
    for i in range(10):
        ev.append(api(p, "cuLaunchKernel", 2100 * i, kernel="k", correlation=i + 1,
                      stack=["load (/home/u/d.py:4)", "<module> (/home/u/d.py:9)"]))
        ev.append(gpu(p, "kernel", "k", 2100 * i + 5, 100, 3, i + 1))
    return ev


def long_gap():
    """pid 600, device 0, stream 7: 20 kernels of 10 us, kernel i launched at
    100 i (i < 10) or 100 i + 50000 (a 50 ms pause before the 11th, launched
    at load (/home/u/g.py:3); the others at step (/home/u/g.py:7)) and run
    5 us after its launch: a launch-bound stream.  Host-bound: 18 gaps of
    85 us, the launches' overhead (launch_bound, 1.53 ms), and one of
    50.085 ms, which is not (host_bound at the load line)."""
    p = 600
    ev = [meta(p, "gap")]
    for i in range(20):
        t = 100 * i + (50000 if i >= 10 else 0)
        site = "load (/home/u/g.py:3)" if i == 10 else "step (/home/u/g.py:7)"
        ev.append(api(p, "cuLaunchKernel", t, kernel="k", correlation=i + 1,
                      stack=[site, "<module> (/home/u/g.py:9)"]))
        ev.append(gpu(p, "kernel", "k", t + 5, 10, 7, i + 1))
    return ev


def write(path, ev):
    with open(path, "w") as f:
        f.write('{"gpubpf":{"version":"0.1.0","clock":"CLOCK_MONOTONIC","realtime_offset_ns":0,'
                '"host":"synthetic","dropped_events":{},"dropped_total":0,"events":%d},'
                '"displayTimeUnit":"ns","traceEvents":[\n' % len(ev))
        for i, e in enumerate(ev):
            f.write(json.dumps(e, separators=(",", ":")))
            f.write(",\n" if i + 1 < len(ev) else "\n")
        f.write("]}\n")


if __name__ == "__main__":
    if sys.argv[1] == "known":
        write(sys.argv[2], known())
    elif sys.argv[1] == "loop":
        write(sys.argv[2], loop())
    elif sys.argv[1] == "repeats":
        write(sys.argv[2], repeats())
    elif sys.argv[1] == "loop_samples":
        write(sys.argv[2], loop_samples())
    elif sys.argv[1] == "workers":
        write(sys.argv[2], workers())
    elif sys.argv[1] == "states":
        write(sys.argv[2], states())
    elif sys.argv[1] == "gc":
        write(sys.argv[2], gc_states())
    elif sys.argv[1] == "shortsync":
        write(sys.argv[2], short_sync())
    elif sys.argv[1] == "mixedsync":
        write(sys.argv[2], mixed_sync())
    elif sys.argv[1] == "drained":
        write(sys.argv[2], drained())
    elif sys.argv[1] == "setup":
        write(sys.argv[2], setup_loop())
    elif sys.argv[1] == "installed":
        write(sys.argv[2], installed())
    elif sys.argv[1] == "trainer":
        write(sys.argv[2], trainer_loop())
    elif sys.argv[1] == "torchloop":
        write(sys.argv[2], torch_loop())
    elif sys.argv[1] == "loader":
        write(sys.argv[2], loader())
    elif sys.argv[1] == "longgap":
        write(sys.argv[2], long_gap())
    else:
        write(sys.argv[2], big(int(sys.argv[3])))
