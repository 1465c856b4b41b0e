"""A small PyTorch training loop for the GPU checks (tests/gpu/).

usage: torch_loop.py [--steps N] [--item-every N] [--profile TRACE.json]
Prints one line: steps, elapsed seconds, loss, and the CLOCK_MONOTONIC
window of the loop (ns) so a trace can be cut to it.  --profile runs the
loop under torch.profiler and exports its Chrome trace.
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--item-every", type=int, default=10)
    p.add_argument("--profile", metavar="TRACE")
    o = p.parse_args()
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    torch.cuda.synchronize()
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
