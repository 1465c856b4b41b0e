#!/usr/bin/env python3
"""PyTorch's autograd engine making driver calls inside its backward nodes,
for gpubpf's autograd node names (simulated driver, CPU PyTorch).

    LD_LIBRARY_PATH=build/sim python3 tests/py/autograd_workload.py \
        --lib-dir sim --truth T.json [--steps N] [--wait-file F]

PyTorch on a CPU runs no kernels on the simulated driver, so the driver
calls come from saved-tensor hooks: forward code saves tensors for
backward through pack(), which notes the line of forward code that saved
it; when the engine runs a node, the node unpacks what it saved through
unpack(), which launches the kernel "unpack_L<line>" (20 us) on the
simulated driver.  Each launch is thus made while the engine runs a node
(MulBackward0, ExpBackward0...) made at that line.  A forward launch
("forward_step") runs outside any node.

Per step: model() over LAYERS layers of layer(); loss.backward().  The
truth file maps each line to the class of the node made there (the
grad_fn's name()) and the unpack launches made for it over all steps.
--wait-file: between the first step's forward and its backward, wait
until that file exists: a recording attached then sees nodes made before
it (the first step's) run.
"""
import argparse
import importlib
import json
import os
import sys
import time

import torch

LAYERS = 2
UNPACK_US = 20
made = {}       # line -> node class made there
launches = {}   # line -> unpack launches
drv = kernels = None


def forward_line():
    """The line of this file's innermost frame under the hook."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename != __file__:
        f = f.f_back
    return f.f_lineno if f is not None else 0


def pack(t):
    return (t, forward_line())


def unpack(packed):
    t, line = packed
    name = "unpack_L%d" % line
    if name not in kernels:
        kernels[name] = train.Kernel(drv, module, name)
    drv.launch(kernels[name], UNPACK_US)
    launches[line] = launches.get(line, 0) + 1
    return t


def note(t):
    """The class of the node t's op made, under the line of the op."""
    made[sys._getframe(1).f_lineno] = t.grad_fn.name()
    return t


def layer(x, w):
    h = note(x * w)     # MUL_LINE
    return note(h.exp())  # EXP_LINE


def model(x, ws):
    drv.launch(kernels["forward_step"], UNPACK_US)
    for w in ws:
        x = layer(x, w)
    return x.sum()


def main():
    global train, drv, module, kernels
    p = argparse.ArgumentParser()
    p.add_argument("--lib-dir", required=True, help="the folder holding train.py")
    p.add_argument("--truth", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--wait-file")
    o = p.parse_args()
    sys.path.insert(0, o.lib_dir)
    train = importlib.import_module("train")
    drv = train.Driver(None, False)
    drv.init()
    module = drv.load_module()
    kernels = {"forward_step": train.Kernel(drv, module, "forward_step")}
    torch.manual_seed(0)
    ws = [torch.rand(64, requires_grad=True) for _ in range(LAYERS)]
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        for step in range(o.steps):
            x = torch.rand(64, requires_grad=True)
            loss = model(x, ws)
            while step == 0 and o.wait_file and not os.path.exists(o.wait_file):
                time.sleep(0.01)
            loss.backward()
    drv.ctx_synchronize()
    with open(o.truth, "w") as f:
        json.dump({"pid": os.getpid(), "torch": torch.__version__, "steps": o.steps,
                   "unpack_us": UNPACK_US, "file": os.path.abspath(__file__),
                   "made": {str(k): v for k, v in made.items()},
                   "launches": {str(k): v for k, v in launches.items()}}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
