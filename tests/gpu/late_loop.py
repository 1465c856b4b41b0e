"""A long PyTorch loop for the late-attach GPU check (tests/gpu/t0970-gpu-late-attach.sh).

usage: late_loop.py [--seconds S] [--profile-steps N --profile-out TRACE.json]
                    [--hold-profiler]
Started normally (no CUDA_INJECTION64_PATH).  Prints, every second,
"rate MONOTONIC_NS STEPS_PER_S STEP" (flushed), so a checker can compare
the speed before gpubpf attached with the speed after it left.
--profile-steps N: the first N steps run under torch.profiler, exported to
--profile-out (per-step kernel counts to compare with).  --hold-profiler:
torch.profiler stays active for the whole run (CUPTI is held: gpubpf must
fall back to host calls and say why).
"""
import argparse
import sys
import time

import torch

import workload


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--profile-steps", type=int, default=0)
    p.add_argument("--profile-out")
    p.add_argument("--hold-profiler", action="store_true")
    o = p.parse_args()
    model, opt, x, y = workload.build()
    prof = None
    if o.profile_steps or o.hold_profiler:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    end = time.monotonic() + o.seconds
    step, last_step, last = 0, 0, time.monotonic()
    while time.monotonic() < end:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step % 10 == 0:
            loss.item()
        if prof and not o.hold_profiler and step == o.profile_steps:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            prof.export_chrome_trace(o.profile_out)
            prof = None
        now = time.monotonic()
        if now - last >= 1.0:
            print("rate %d %.1f %d" % (time.monotonic_ns(), (step - last_step) / (now - last), step))
            sys.stdout.flush()
            last, last_step = now, step
    torch.cuda.synchronize()
    if prof:
        prof.__exit__(None, None, None)
    print("late_loop: steps %d" % step)


if __name__ == "__main__":
    main()
