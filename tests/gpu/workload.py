"""The small PyTorch training step the GPU checks run (torch_loop.py,
late_loop.py): an MLP, SGD, one fixed batch, all on the GPU."""
import torch


def build():
    """(model, optimizer, x, y) on the first CUDA device, synchronised."""
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    torch.cuda.synchronize()
    return model, opt, x, y
