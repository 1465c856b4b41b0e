#!/usr/bin/env python3
"""A job whose training loop library code runs (simulated driver): one
line of user code, main()'s TRAIN_LINE, calls Trainer.train() of
tests/py/site-packages/minitrainer.py (library code by its path, as
transformers' is), whose loop calls back into this file's
MyTrainer.compute_loss (3 x fwd of 1000 us, at LOSS_LINE).

    LD_LIBRARY_PATH=build/sim python3 tests/py/trainer_workload.py [--steps N]

gpubpf report finds the loop in Trainer.train, and names each call in it
by the library line that made it (the collate's launch, the `.item()`),
or by this file's line where one lies under the loop (compute_loss):
never by TRAIN_LINE, which would name every call alike.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sim", "site-packages"))
sys.path.insert(0, os.path.join(HERE, "site-packages"))
import minitrainer  # noqa: E402
import simcuda  # noqa: E402


class MyTrainer(minitrainer.Trainer):
    KERNELS = minitrainer.Trainer.KERNELS + ("fwd",)

    def compute_loss(self, batch):
        for _ in range(3):
            self.drv.launch(self.k["fwd"], 1000)    # LOSS_LINE


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    o = p.parse_args()
    drv = simcuda.Driver(None, False)
    drv.init()
    mod = drv.load_module()
    k = {n: simcuda.Kernel(drv, mod, n) for n in MyTrainer.KERNELS}
    MyTrainer(drv, o.steps, k).train()      # TRAIN_LINE
    return 0


if __name__ == "__main__":
    sys.exit(main())
