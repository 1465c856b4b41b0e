"""A long PyTorch loop for the late-attach GPU check (tests/gpu/t0970-gpu-late-attach.sh).

usage: late_loop.py [--seconds S] [--hold-profiler]
       late_loop.py --profile-steps N --profile-out TRACE.json
       late_loop.py --turns IN OUT STOP [--steps-per-turn K]
Started normally (no CUDA_INJECTION64_PATH).  Prints, every second,
"rate MONOTONIC_NS STEPS_PER_S STEP" (flushed), so a checker can compare
the speed before gpubpf attached with the speed after it left.
--turns: loops in a ring of FIFOs take turns (tests/gpu/t0975): after
"ready", each turn waits for a byte on IN, runs K steps and synchronises,
prints "turn MONOTONIC_NS ROUND NS_PER_STEP" and writes a byte to OUT; once
the file STOP exists, the next turn only passes the byte on and the loop
ends (so does each of the ring, in turn).  One loop runs at a time, on the
whole GPU, and a round's turns, milliseconds apart, see the same speed of
the machine.
--profile-steps N: steps 10 to 10+N (past the first steps' one-time work)
run under torch.profiler, exported to --profile-out, and the loop ends
there: per-step kernel counts to compare with, taken in a process of their
own so that the attached one never had a profiler.  --hold-profiler:
torch.profiler stays active for the whole run (CUPTI is held: gpubpf must
fall back to host calls and say why).
"""
import argparse
import os
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
    p.add_argument("--turns", nargs=3, metavar=("IN", "OUT", "STOP"))
    p.add_argument("--steps-per-turn", type=int, default=20)
    o = p.parse_args()
    model, opt, x, y = workload.build()
    if o.turns:
        turns(o, model, opt, x, y)
        return
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    prof = None
    if o.hold_profiler:
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    end = time.monotonic() + o.seconds
    steps, last_step, last = 0, 0, time.monotonic()
    while time.monotonic() < end:
        if o.profile_steps and steps == 10:
            torch.cuda.synchronize()
            prof = torch.profiler.profile(activities=acts)
            prof.__enter__()
        loss = step(model, opt, x, y)
        steps += 1
        if steps % 10 == 0:
            loss.item()
        if o.profile_steps and steps == 10 + o.profile_steps:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            prof.export_chrome_trace(o.profile_out)
            print("late_loop: profiled steps 10 to %d" % steps)
            return
        now = time.monotonic()
        if now - last >= 1.0:
            print("rate %d %.1f %d" % (time.monotonic_ns(), (steps - last_step) / (now - last), steps))
            sys.stdout.flush()
            last, last_step = now, steps
    torch.cuda.synchronize()
    if prof:
        prof.__exit__(None, None, None)
    print("late_loop: steps %d" % steps)


def step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def turns(o, model, opt, x, y):
    for _ in range(20):                 # warm-up: allocations, autotuning
        step(model, opt, x, y)
    torch.cuda.synchronize()
    # read-write: opening never blocks, a write never fails
    tin, tout = os.open(o.turns[0], os.O_RDWR), os.open(o.turns[1], os.O_RDWR)
    print("ready", flush=True)
    r = 0
    while True:
        os.read(tin, 1)
        if os.path.exists(o.turns[2]):
            os.write(tout, b".")
            break
        t0, ns = time.monotonic_ns(), time.perf_counter_ns()
        for _ in range(o.steps_per_turn):
            loss = step(model, opt, x, y)
        loss.item()
        torch.cuda.synchronize()
        print("turn %d %d %.0f" % (t0, r, (time.perf_counter_ns() - ns) / o.steps_per_turn),
              flush=True)
        os.write(tout, b".")
        r += 1
    print("late_loop: turns %d" % r, flush=True)


if __name__ == "__main__":
    main()
