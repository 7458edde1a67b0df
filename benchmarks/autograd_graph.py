"""A small autograd graph, forward and backward: TensorWeaver against PyTorch and NumPy by hand.

Run: python benchmarks/autograd_graph.py [--size 64] [--repeat 21] [--clock cpu|wall]

Ten elementwise ops on ``--size`` float32 elements (three leaves that require grad:
``x``, ``w``, ``b``), then a sum, then backward to the three leaves:

  h1 = x * w;  h2 = h1 + b;  h3 = tanh(h2);  h4 = h3 * x;  h5 = h4 - w;  h6 = exp(h5)
  h7 = h6 * 0.5;  h8 = h7 + h3;  h9 = relu(h8);  h10 = h9 * h9;  loss = h10.sum()

Candidates: NumPy with the backward written by hand, TensorWeaver on numpy, PyTorch
eager, TensorWeaver on torch:cpu. Each is timed forward only (recording the graph) and
forward + backward; backward is the difference. The gradients of all four are checked
against each other first.
"""

from __future__ import annotations

from typing import Any, Callable

import harness
import numpy as np
import tensorweaver as tw
import torch


def forward(x: Any, w: Any, b: Any, relu: Callable[[Any], Any]) -> Any:
    """The graph on tw or torch tensors (both have PyTorch's API)."""
    h3 = (x * w + b).tanh()
    h6 = (h3 * x - w).exp()
    h9 = relu(h6 * 0.5 + h3)
    return (h9 * h9).sum()


def numpy_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple:
    h3 = np.tanh(x * w + b)
    h6 = np.exp(h3 * x - w)
    h8 = h6 * np.float32(0.5) + h3
    h9 = np.maximum(h8, np.float32(0))
    return (h9 * h9).sum(), (h3, h6, h8, h9)


def numpy_backward(x: np.ndarray, w: np.ndarray, saved: tuple) -> tuple:
    """d loss / d (x, w, b), by hand."""
    h3, h6, h8, h9 = saved
    g8 = (h9 + h9) * (h8 > 0)
    g5 = g8 * np.float32(0.5) * h6
    g3 = g8 + g5 * x
    g2 = g3 * (np.float32(1) - h3 * h3)
    return g5 * h3 + g2 * w, g2 * x - g5, g2


def numpy_step(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple:
    _, saved = numpy_forward(x, w, b)
    return numpy_backward(x, w, saved)


def autograd_step(leaves: list, relu: Callable[[Any], Any]) -> list:
    for t in leaves:
        t.grad = None
    forward(*leaves, relu).backward()
    return [t.grad for t in leaves]


def bind(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: fn(*args)


def check_gradients(host: list, tw_np: list, th: list, tw_th: list) -> float:
    """The largest difference between the four candidates' gradients (raises if too large)."""
    reference = numpy_step(*host)
    worst = 0.0
    for grads in (
        [g.numpy() for g in autograd_step(tw_np, tw.relu)],
        [g.numpy() for g in autograd_step(th, torch.relu)],
        [g.numpy() for g in autograd_step(tw_th, tw.relu)],
    ):
        for got, want in zip(grads, reference):
            worst = max(worst, float(np.abs(got - want).max()))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return worst


def main() -> None:
    p = harness.parser(__doc__, repeat=21, sample_ms=10)
    p.add_argument("--size", type=int, default=64, help="elements per tensor")
    args = p.parse_args()
    harness.setup_torch(torch)
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(args.size).astype(np.float32) for _ in range(3)]
    tw_np = [tw.tensor(h, requires_grad=True) for h in host]
    tw_th = [tw.tensor(h, device="torch:cpu", requires_grad=True) for h in host]
    th = [torch.from_numpy(h.copy()).requires_grad_() for h in host]
    worst = check_gradients(host, tw_np, th, tw_th)

    medians = harness.measure(
        {
            "numpy fwd": bind(numpy_forward, *host),
            "numpy fwd+bwd": bind(numpy_step, *host),
            "tw-numpy fwd": bind(forward, *tw_np, tw.relu),
            "tw-numpy fwd+bwd": bind(autograd_step, tw_np, tw.relu),
            "torch fwd": bind(forward, *th, torch.relu),
            "torch fwd+bwd": bind(autograd_step, th, torch.relu),
            "tw-torch fwd": bind(forward, *tw_th, tw.relu),
            "tw-torch fwd+bwd": bind(autograd_step, tw_th, tw.relu),
        },
        args,
    )
    us = {name: t * 1e6 for name, t in medians.items()}

    print(harness.describe(args, torch))
    print(f"10 elementwise ops + sum on {args.size} float32, 3 leaves; gradients agree")
    print(f"(largest difference {worst:.1e}). µs per iteration:")
    print(f"{'candidate':12s}{'forward':>10s}{'backward':>10s}{'fwd+bwd':>10s}")
    for name in ("numpy", "tw-numpy", "torch", "tw-torch"):
        fwd, total = us[f"{name} fwd"], us[f"{name} fwd+bwd"]
        print(f"{name:12s}{fwd:10.1f}{total - fwd:10.1f}{total:10.1f}")
    total = {name: us[f"{name} fwd+bwd"] for name in ("numpy", "tw-numpy", "torch", "tw-torch")}
    print("ratios (fwd+bwd):")
    print(f"  tw-numpy / numpy by hand  {harness.ratio(total['tw-numpy'], total['numpy'])}")
    print(f"  tw-numpy / torch          {harness.ratio(total['tw-numpy'], total['torch'])}")
    print(f"  tw-torch / torch          {harness.ratio(total['tw-torch'], total['torch'])}")


if __name__ == "__main__":
    main()
