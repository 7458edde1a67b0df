"""tw.compile against eager TensorWeaver, NumPy by hand and PyTorch eager, on two steps.

Run: python benchmarks/compiled_step.py [--batch 256] [--repeat 11] [--threads 1]

  mlp   784-512-512-10 MLP, float32, cross-entropy, plain SGD (benchmarks/mlp_step.py's step)
  tiny  y = ((a * b) + a).sum(); y.backward() on 16 float32s (pure per-op overhead)

Candidates per step: ``numpy`` (written by hand), ``tw-eager`` and ``tw-compiled`` (the
whole step compiled) on the NumPy backend, ``tw-compiled-module`` (MLP only: the model
compiled, the rest eager), ``torch`` (PyTorch eager) and ``tw-torch-compiled`` on
torch:cpu. Every
candidate starts from the same weights; after the warm-up steps the compiled MLPs must agree
with the eager one. Goals of issue 16: compiled NumPy MLP <= 1.0x NumPy by hand, compiled
tiny step <= 2x NumPy's own ops; compiled torch:cpu <= 0.9x PyTorch eager.
"""

from __future__ import annotations

from typing import Any, Callable

import harness
import numpy as np
import tensorweaver as tw
import torch
from mlp_step import (
    LR,
    SIZES,
    NumpyMLP,
    Trainer,
    init_weights,
    torch_mlp,
    torch_trainer,
    tw_mlp,
    tw_trainer,
)

TINY = 16


def compiled_trainer(params: list, x: np.ndarray, y: np.ndarray, device: str) -> Trainer:
    """A trainer whose ``step`` is compiled and replaying, after four steps (three traces:
    gradients appear on the first step, then two that agree; then a replay)."""
    trainer = tw_trainer(tw_mlp(params, device), x, y, device)
    trainer.step = step = tw.compile(trainer.step)
    for _ in range(4):
        trainer.step()
    if step.traces != 3 or len(step.graph_source()) != 1:
        raise AssertionError(f"the compiled step on {device} does not replay")
    return trainer


def compiled_module_trainer(params: list, x: np.ndarray, y: np.ndarray) -> Trainer:
    """A trainer whose model is ``tw.compile(model)`` (forward and its backward replayed;
    zero_grad, the loss and the optimizer eager), after three steps (two traces)."""
    trainer = tw_trainer(tw_mlp(params, "numpy"), x, y, "numpy")
    trainer.model = forward = tw.compile(trainer.model)
    for _ in range(3):
        trainer.step()
    if forward.traces != 2 or len(forward.graph_source()) != 1:
        raise AssertionError("the compiled module does not replay")
    return trainer


def mlp_candidates(batch: int) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    params = init_weights(rng)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], batch)
    by_hand = NumpyMLP(params)
    eager = tw_trainer(tw_mlp(params, "numpy"), x, y, "numpy")
    for _ in range(4):
        eager.step()
    compiled = compiled_trainer(params, x, y, "numpy")
    module = compiled_module_trainer(params, x, y)
    module.step()  # four steps, as the others
    for other in (compiled, module):
        for got, want in zip(other.model.parameters(), eager.model.parameters()):
            if not tw.equal(got, want):
                raise AssertionError("compiled MLP steps differ from the eager ones")
    return {
        "numpy": lambda: by_hand.step(x, y),
        "tw-eager": eager.step,
        "tw-compiled": compiled.step,
        "tw-compiled-module": module.step,
        "torch": torch_trainer(torch_mlp(params), x, y).step,
        "tw-torch-compiled": compiled_trainer(params, x, y, "torch:cpu").step,
    }


def tiny_candidates() -> dict[str, Callable[[], Any]]:
    host_a = np.linspace(-1, 1, TINY, dtype=np.float32)
    host_b = np.linspace(2, 3, TINY, dtype=np.float32)
    grads = [np.zeros(TINY, np.float32), np.zeros(TINY, np.float32)]

    def by_hand() -> Any:
        y = ((host_a * host_b) + host_a).sum()
        grads[0] += host_b + 1  # dy/da
        grads[1] += host_a  # dy/db
        return y

    def step(a: Any, b: Any) -> Any:
        y = ((a * b) + a).sum()
        y.backward()
        return y

    def tw_step(device: str, compiled: bool) -> Callable[[], Any]:
        a = tw.tensor(host_a, device=device, requires_grad=True)
        b = tw.tensor(host_b, device=device, requires_grad=True)
        fn = tw.compile(step) if compiled else step
        return lambda: fn(a, b)

    ta = torch.tensor(host_a, requires_grad=True)
    tb = torch.tensor(host_b, requires_grad=True)
    return {
        "numpy": by_hand,
        "tw-eager": tw_step("numpy", False),
        "tw-compiled": tw_step("numpy", True),
        "torch": lambda: step(ta, tb),
        "tw-torch-compiled": tw_step("torch:cpu", True),
    }


def report(title: str, unit: str, scale: float, medians: dict[str, float]) -> None:
    print(title)
    for name, t in medians.items():
        print(f"  {name:18s}{t * scale:9.2f} {unit}")
    ms = medians
    print(f"  tw-compiled / numpy            {ms['tw-compiled'] / ms['numpy']:5.2f}x")
    if "tw-compiled-module" in ms:
        print(f"  tw-compiled-module / numpy     {ms['tw-compiled-module'] / ms['numpy']:5.2f}x")
    print(f"  tw-compiled / tw-eager         {ms['tw-compiled'] / ms['tw-eager']:5.2f}x")
    print(f"  tw-eager / numpy               {ms['tw-eager'] / ms['numpy']:5.2f}x")
    print(f"  tw-torch-compiled / torch      {ms['tw-torch-compiled'] / ms['torch']:5.2f}x")


def main() -> None:
    p = harness.parser(__doc__, repeat=11, sample_ms=200)
    p.add_argument("--batch", type=int, default=256)
    args = p.parse_args()
    harness.setup_torch(torch)
    print(harness.describe(args, torch))
    mlp = harness.measure(mlp_candidates(args.batch), args)
    report(f"MLP {'-'.join(map(str, SIZES))}, batch {args.batch}, SGD lr {LR}", "ms", 1e3, mlp)
    tiny = harness.measure(tiny_candidates(), args)
    report(f"tiny step on {TINY} float32s", "us", 1e6, tiny)


if __name__ == "__main__":
    main()
