"""A small PyTorch training loop for the GPU checks (tests/gpu/).

usage: torch_loop.py [--steps N] [--item-every N]
Prints one line: steps, elapsed seconds, loss.
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--item-every", type=int, default=10)
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
    print("torch_loop: steps %d elapsed %.3f s loss %.4f" % (o.steps, time.perf_counter() - t0, loss.item()))


if __name__ == "__main__":
    main()
