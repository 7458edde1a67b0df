"""Custom autograd Functions, after the PyTorch tutorial "Defining new autograd functions".

Part one fits ``y = sin(x)`` with ``a + b * P3(c + d * x)``, where P3 (the Legendre polynomial
of degree three) is a ``torch.autograd.Function`` with a hand-written backward, and the
parameters are updated by hand under ``torch.no_grad()``; ``--function setup_context`` writes
P3 in the ``setup_context`` style instead. Part two trains a small network with quantized
weights (a straight-through-estimator rounding Function) and a ReLU Function that also
returns its non-differentiable mask. ``gradcheck`` verifies the backward passes.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
from torch.autograd.function import once_differentiable


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = 1/2 (5x^3 - 3x), with its derivative 3/2 (5x^2 - 1) as the backward."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class LegendrePolynomial3Split(torch.autograd.Function):
    """P3 again, in the style PyTorch 2 recommends: ``forward`` takes no ctx, and
    ``setup_context`` saves what ``backward`` needs; the backward is not differentiable."""

    @staticmethod
    def forward(input):
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (input,) = inputs
        ctx.save_for_backward(input)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class RoundSTE(torch.autograd.Function):
    """Rounds in the forward pass; passes the gradient straight through in the backward."""

    @staticmethod
    def forward(ctx, input):
        return torch.round(input)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class MyReLU(torch.autograd.Function):
    """ReLU that also returns which inputs were positive (a mask with no gradient)."""

    @staticmethod
    def forward(ctx, input):
        mask = input > 0
        ctx.save_for_backward(mask)
        ctx.mark_non_differentiable(mask)
        return input.clamp(min=0), mask

    @staticmethod
    def backward(ctx, grad_output, grad_mask):
        (mask,) = ctx.saved_tensors
        grad_input = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output * mask.type_as(grad_output)
        return grad_input


class Polynomial3(nn.Module):
    """a + b * P3(c + d * x), with the tutorial's starting point for the four scalars."""

    def __init__(self, function: type[torch.autograd.Function] = LegendrePolynomial3) -> None:
        super().__init__()
        self.function = function
        self.a = nn.Parameter(torch.full((), 0.0))
        self.b = nn.Parameter(torch.full((), -1.0))
        self.c = nn.Parameter(torch.full((), 0.0))
        self.d = nn.Parameter(torch.full((), 0.3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        P3 = self.function.apply
        return self.a + self.b * P3(self.c + self.d * x)

    def string(self) -> str:
        return f"y = {self.a.item()} + {self.b.item()} * P3({self.c.item()} + {self.d.item()} x)"


class QuantLinear(nn.Linear):
    """A linear layer whose weights are rounded to multiples of 2^-bits in the forward pass."""

    def __init__(self, in_features: int, out_features: int, bits: int) -> None:
        super().__init__(in_features, out_features)
        self.scale = 2.0**bits

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        weight = RoundSTE.apply(self.weight * self.scale) / self.scale
        return nn.functional.linear(input, weight, self.bias)


class QuantMLP(nn.Module):
    def __init__(self, in_features: int, hidden: int, out_features: int, bits: int) -> None:
        super().__init__()
        self.fc1 = QuantLinear(in_features, hidden, bits)
        self.fc2 = QuantLinear(hidden, out_features, bits)

    def forward(self, x: torch.Tensor):
        h, active = MyReLU.apply(self.fc1(x))
        return self.fc2(h), active


def check_gradients() -> None:
    """Compares each Function's backward with finite differences, in double precision."""
    x = torch.randn(6, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(LegendrePolynomial3.apply, (x,), eps=1e-6, atol=1e-4)
    # Away from the kink at 0, MyReLU's output has the true ReLU's derivative.
    z = (x.detach().abs() + 0.1) * x.detach().sign()
    z.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: MyReLU.apply(t)[0], (z,), eps=1e-6, atol=1e-4)
    # The straight-through estimator is not the derivative of round: gradcheck must say so.
    w = torch.linspace(0.1, 0.4, 4, dtype=torch.double, requires_grad=True)
    assert not torch.autograd.gradcheck(RoundSTE.apply, (w,), raise_exception=False)
    print("gradcheck: LegendrePolynomial3 and MyReLU pass, RoundSTE differs as expected")


def fit_sine(model: Polynomial3, args: argparse.Namespace) -> list[float]:
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=torch.float)
    y = torch.sin(x)
    losses = []
    for t in range(args.steps):
        y_pred = model(x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            print(t, loss.item())
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= args.lr * p.grad
                p.grad = None
    print(f"Result: {model.string()}")
    return losses


def train_quantized(model: QuantMLP, args: argparse.Namespace) -> list[float]:
    rng = np.random.default_rng(args.seed)
    inputs = rng.normal(size=(args.samples, 8)).astype(np.float32)
    targets = np.stack([np.sin(inputs[:, 0]) * inputs[:, 1], np.abs(inputs[:, 2])], axis=1)
    x, y = torch.from_numpy(inputs), torch.tensor(targets, dtype=torch.float32)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    losses = []
    for step in range(args.steps):
        optimizer.zero_grad()
        out, active = model(x)
        loss = nn.functional.mse_loss(out, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step:3d} loss {loss.item():.5f} active units {active.float().mean():.3f}")
    return losses


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Custom autograd Functions")
    parser.add_argument("--model", choices=["legendre", "quant"], default="legendre")
    parser.add_argument(
        "--function",
        choices=["ctx", "setup_context"],
        default="ctx",
        help="P3 as forward(ctx, x), or as forward(x) with setup_context",
    )
    parser.add_argument("--steps", type=int, default=300, help="training steps")
    parser.add_argument("--lr", type=float, default=None, help="learning rate")
    parser.add_argument("--samples", type=int, default=256, help="regression samples (quant)")
    parser.add_argument("--hidden", type=int, default=32, help="hidden units (quant)")
    parser.add_argument("--bits", type=int, default=4, help="fraction bits of weights (quant)")
    parser.add_argument(
        "--gradcheck",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="check the Functions' gradients first",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--save-init", type=str, default=None, help="save the initial state_dict here"
    )
    parser.add_argument("--init", type=str, default=None, help="initial state_dict to load")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[float]:
    """Check the Functions, then train the chosen model; its training losses."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if args.gradcheck:
        check_gradients()
    if args.model == "legendre":
        args.lr = 5e-6 if args.lr is None else args.lr
        functions = {"ctx": LegendrePolynomial3, "setup_context": LegendrePolynomial3Split}
        model = Polynomial3(functions[args.function])
    else:
        args.lr = 0.05 if args.lr is None else args.lr
        model = QuantMLP(8, args.hidden, 2, args.bits)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.model == "legendre":
        return fit_sine(model, args)
    return train_quantized(model, args)


if __name__ == "__main__":
    main()
