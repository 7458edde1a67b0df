"""One SGD step of an MLP: TensorWeaver against NumPy by hand and against PyTorch eager.

Run: python benchmarks/mlp_step.py [--batch 256] [--repeat 11] [--threads 1] [--clock cpu|wall]

The MLP is 784-512-512-10 with ReLU, float32, cross-entropy on class indices, plain SGD
(lr 0.01); a step is zero_grad, forward, loss, backward and the update. Candidates:

  numpy     forward and backward written by hand in NumPy, updates in place
  tw-numpy  TensorWeaver on numpy: tw.nn.Linear/ReLU, F.cross_entropy, tw.optim.SGD
  torch     PyTorch eager: torch.nn, F.cross_entropy, torch.optim.SGD
  tw-torch  the tw-numpy code on torch:cpu

All four start from the same weights; after one step their losses and weights are
checked against each other. Targets: tw-numpy within 1.15x of NumPy by hand (issue 3),
tw-torch within 1.10x of PyTorch (issue 4).
"""

from __future__ import annotations

from typing import Any

import harness
import numpy as np
import tensorweaver as tw
import tensorweaver.nn.functional as TF
import torch
from tensorweaver import nn

SIZES = (784, 512, 512, 10)
LR = 0.01
TW_NUMPY_TARGET = 1.15
TW_TORCH_TARGET = 1.10


def init_weights(rng: np.random.Generator) -> list[np.ndarray]:
    """[W1, b1, W2, b2, W3, b3] with (out, in) weights, drawn as nn.Linear's default does."""
    params = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


class NumpyMLP:
    """The MLP with its gradients written by hand: the fastest plain NumPy we know how to write.

    ``xp`` is the array module: NumPy, or one with its API (cuPyNumeric).
    """

    def __init__(self, params: list[np.ndarray], xp: Any = np) -> None:
        self.xp = xp
        self.params = [xp.array(p) for p in params]

    def step(self, x: Any, y: Any) -> float:
        xp = self.xp
        w1, b1, w2, b2, w3, b3 = self.params
        n = x.shape[0]
        z1 = x @ w1.T
        z1 += b1
        h1 = xp.maximum(z1, 0)
        z2 = h1 @ w2.T
        z2 += b2
        h2 = xp.maximum(z2, 0)
        z3 = h2 @ w3.T
        z3 += b3
        # Softmax cross-entropy; its gradient is (softmax - onehot) / n.
        z3 -= z3.max(axis=1, keepdims=True)
        e = xp.exp(z3)
        total = e.sum(axis=1, keepdims=True)
        rows = xp.arange(n)
        loss = float(xp.log(total[:, 0]).mean() - z3[rows, y].mean())
        g3 = e
        g3 /= total
        g3[rows, y] -= 1
        g3 /= n
        gw3, gb3 = g3.T @ h2, g3.sum(axis=0)
        g2 = g3 @ w3
        g2 *= z2 > 0
        gw2, gb2 = g2.T @ h1, g2.sum(axis=0)
        g1 = g2 @ w2
        g1 *= z1 > 0
        gw1, gb1 = g1.T @ x, g1.sum(axis=0)
        for p, g in zip(self.params, (gw1, gb1, gw2, gb2, gw3, gb3)):
            g *= LR
            p -= g
        return loss


def tw_mlp(params: list[np.ndarray], device: str) -> Any:
    with tw.device(device):
        model = nn.Sequential(
            nn.Linear(SIZES[0], SIZES[1]),
            nn.ReLU(),
            nn.Linear(SIZES[1], SIZES[2]),
            nn.ReLU(),
            nn.Linear(SIZES[2], SIZES[3]),
        )
    with tw.no_grad():
        for p, host in zip(model.parameters(), params):
            p.copy_(tw.tensor(host, device=device))
    return model


def torch_mlp(params: list[np.ndarray]) -> Any:
    model = torch.nn.Sequential(
        torch.nn.Linear(SIZES[0], SIZES[1]),
        torch.nn.ReLU(),
        torch.nn.Linear(SIZES[1], SIZES[2]),
        torch.nn.ReLU(),
        torch.nn.Linear(SIZES[2], SIZES[3]),
    )
    with torch.no_grad():
        for p, host in zip(model.parameters(), params):
            p.copy_(torch.from_numpy(host))
    return model


class Trainer:
    """One training step of a tw or torch model, written once for both (same API)."""

    def __init__(self, model: Any, optim: Any, cross_entropy: Any, x: Any, y: Any) -> None:
        self.model, self.optim, self.cross_entropy = model, optim, cross_entropy
        self.x, self.y = x, y

    def step(self) -> Any:
        self.optim.zero_grad()
        loss = self.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.optim.step()
        return loss

    def parameters(self) -> list[np.ndarray]:
        # Copies: tw's .numpy() shares a parameter's memory (as PyTorch's), and every later
        # step would then write its update into that memory too.
        return [np.array(p.detach()) for p in self.model.parameters()]


def tw_trainer(model: Any, x: np.ndarray, y: np.ndarray, device: str) -> Trainer:
    """Plain SGD and cross-entropy for tw ``model`` on the host batch, moved to ``device``."""
    optim = tw.optim.SGD(model.parameters(), lr=LR)
    data = tw.tensor(x, device=device), tw.tensor(y, device=device)
    return Trainer(model, optim, TF.cross_entropy, *data)


def torch_trainer(model: Any, x: np.ndarray, y: np.ndarray) -> Trainer:
    """The same for a torch ``model``, on its own copy of the host batch."""
    optim = torch.optim.SGD(model.parameters(), lr=LR)
    data = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    return Trainer(model, optim, torch.nn.functional.cross_entropy, *data)


def trainers(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The four candidates, each with its own copy of ``params`` and of the batch."""
    out: dict[str, Any] = {"numpy": NumpyMLP(params)}
    for name, device in (("tw-numpy", "numpy"), ("tw-torch", "torch:cpu")):
        out[name] = tw_trainer(tw_mlp(params, device), x, y, device)
    out["torch"] = torch_trainer(torch_mlp(params), x, y)
    return out


def check_one_step(candidates: dict[str, Any], x: np.ndarray, y: np.ndarray) -> float:
    """Run one step of each; their losses and new weights must agree. The largest weight
    difference."""
    reference = candidates["numpy"]
    want_loss = reference.step(x, y)
    worst = 0.0
    for name in ("tw-numpy", "tw-torch", "torch"):
        trainer = candidates[name]
        loss = float(trainer.step().item())
        if not np.isclose(loss, want_loss, rtol=1e-4):
            raise AssertionError(f"{name}: first loss {loss} != NumPy's {want_loss}")
        for got, want in zip(trainer.parameters(), reference.params):
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5, err_msg=name)
            worst = max(worst, float(np.abs(got - want).max()))
    return worst


def main() -> None:
    p = harness.parser(__doc__, repeat=11, sample_ms=200)
    p.add_argument("--batch", type=int, default=256)
    args = p.parse_args()
    harness.setup_torch(torch)
    rng = np.random.default_rng(0)
    params = init_weights(rng)
    x = rng.standard_normal((args.batch, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], args.batch)
    candidates = trainers(params, x, y)
    worst = check_one_step(candidates, x, y)

    numpy_mlp = candidates["numpy"]
    medians = harness.measure(
        {
            "numpy": lambda: numpy_mlp.step(x, y),
            **{name: candidates[name].step for name in ("tw-numpy", "torch", "tw-torch")},
        },
        args,
    )
    ms = {name: t * 1e3 for name, t in medians.items()}

    print(harness.describe(args, torch))
    print(
        f"MLP {'-'.join(map(str, SIZES))}, batch {args.batch}, float32, SGD step; after one "
        f"step all agree (largest weight difference {worst:.1e})"
    )
    for name in ("numpy", "tw-numpy", "torch", "tw-torch"):
        print(f"  {name:10s}{ms[name]:9.2f} ms/step")
    tw_np, tw_th = ms["tw-numpy"] / ms["numpy"], ms["tw-torch"] / ms["torch"]
    print(f"tw-numpy / numpy by hand  {tw_np:5.2f}x  ({harness.verdict(tw_np, TW_NUMPY_TARGET)})")
    print(f"tw-torch / torch          {tw_th:5.2f}x  ({harness.verdict(tw_th, TW_TORCH_TARGET)})")
    print(f"tw-numpy / torch          {ms['tw-numpy'] / ms['torch']:5.2f}x")
    print(f"numpy by hand / torch     {ms['numpy'] / ms['torch']:5.2f}x")


if __name__ == "__main__":
    main()
