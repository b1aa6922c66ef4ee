"""A tiny model trained for a few steps with a brrr op as its activation.

The op's cuda stage is used on a GPU, its reference stage on a CPU; the same model with
torch.sigmoid is trained beside it from the same initial weights, to show the loss going down and
the gradients matching step by step.

    python examples/train_with_brrr_op.py [--steps 20]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from torch import nn


class BrrrActivation(nn.Module):
    def __init__(self, stage) -> None:  # a brrr_kernels.op.loaders.Stage
        super().__init__()
        self.stage = stage

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from brrr_kernels.validation.function import apply

        return apply(self.stage, x)


def load_stage(op_name: str, device: str):
    from brrr_kernels.cuda import builder
    from brrr_kernels.op.loaders import load_cuda, load_op, load_reference

    op = load_op(op_name)
    return load_cuda(op, builder.build_extension(op)) if device == "cuda" else load_reference(op)


def model(activation: Callable[[], nn.Module]) -> nn.Module:
    return nn.Sequential(nn.Linear(16, 64), activation(), nn.Linear(64, 64), activation(), nn.Linear(64, 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    stage = load_stage("sigmoid", device)
    ours = model(lambda: BrrrActivation(stage)).to(device)
    theirs = model(nn.Sigmoid).to(device)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(512, 16, device=device)
    target = torch.tanh(x @ torch.randn(16, 1, device=device) / 2)  # a target the model can learn
    opt_ours = torch.optim.Adam(ours.parameters(), lr=1e-2)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    print(f"sigmoid's {stage.name} stage on {device}")
    first = last = None
    for step in range(args.steps):
        losses = []
        for net, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(x), target)
            loss.backward()
            losses.append(loss)
        worst = max((a.grad - b.grad).abs().max().item() for a, b in zip(ours.parameters(), theirs.parameters()))
        opt_ours.step()
        opt_theirs.step()
        first = losses[0].item() if first is None else first
        last = losses[0].item()
        print(f"step {step:3d}  loss {losses[0].item():.5f}  (torch.sigmoid: {losses[1].item():.5f})  "
              f"max grad difference {worst:.1e}")
        assert worst < 1e-5, "gradients through the brrr op disagree with torch.sigmoid's"
    assert last < first, "the loss did not go down"
    print(f"loss {first:.5f} -> {last:.5f}")


if __name__ == "__main__":
    main()
