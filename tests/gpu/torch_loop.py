"""A small PyTorch training loop for the GPU checks (tests/gpu/).

usage: torch_loop.py [--steps N] [--item-every N] [--profile TRACE.json]
Prints one line: steps, elapsed seconds, loss, and the CLOCK_MONOTONIC
window of the loop (ns) so a trace can be cut to it.  --profile runs the
loop under torch.profiler and exports its Chrome trace.
"""
import argparse
import time

import torch

import workload


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--item-every", type=int, default=10)
    p.add_argument("--profile", metavar="TRACE")
    o = p.parse_args()
    model, opt, x, y = workload.build()
    prof = None
    if o.profile:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    m0 = time.monotonic_ns()
    t0 = time.perf_counter()
    loss = None
    for step in range(o.steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % o.item_every == 0:
            loss.item()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    m1 = time.monotonic_ns()
    if prof:
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(o.profile)
    print("torch_loop: steps %d elapsed %.3f s loss %.4f window %d %d"
          % (o.steps, elapsed, loss.item(), m0, m1))


if __name__ == "__main__":
    main()
