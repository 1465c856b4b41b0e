"""A long PyTorch loop for the late-attach GPU check (tests/gpu/t0970-gpu-late-attach.sh).

usage: late_loop.py [--seconds S] [--hold-profiler]
       late_loop.py --profile-steps N --profile-out TRACE.json
Started normally (no CUDA_INJECTION64_PATH).  Prints, every second,
"rate MONOTONIC_NS STEPS_PER_S STEP" (flushed), so a checker can compare
the speed before gpubpf attached with the speed after it left.
--profile-steps N: steps 10 to 10+N (past the first steps' one-time work)
run under torch.profiler, exported to --profile-out, and the loop ends
there: per-step kernel counts to compare with, taken in a process of their
own so that the attached one never had a profiler.  --hold-profiler:
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
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    prof = None
    if o.hold_profiler:
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    end = time.monotonic() + o.seconds
    step, last_step, last = 0, 0, time.monotonic()
    while time.monotonic() < end:
        if o.profile_steps and step == 10:
            torch.cuda.synchronize()
            prof = torch.profiler.profile(activities=acts)
            prof.__enter__()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step % 10 == 0:
            loss.item()
        if o.profile_steps and step == 10 + o.profile_steps:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            prof.export_chrome_trace(o.profile_out)
            print("late_loop: profiled steps 10 to %d" % step)
            return
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
