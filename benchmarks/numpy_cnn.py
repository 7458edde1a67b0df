"""One Adam step of a small CNN: TensorWeaver on numpy against the same CNN by hand in NumPy.

Run: python benchmarks/numpy_cnn.py [--batch 64] [--repeat 11] [--threads 1] [--clock cpu|wall]

The CNN is benchmarks/torch_models.py's: conv 3x3 (1->16, padding 1) ReLU maxpool 2,
conv 3x3 (16->32, padding 1) ReLU maxpool 2, flatten, linear to 10; 28x28 float32 inputs,
cross-entropy on class indices, Adam (lr 1e-3). A step is zero_grad, forward, loss,
backward and the update. Candidates:

  numpy     forward and backward by hand: im2col (one strided copy) and one batched
            matmul per convolution, its input gradient added back offset by offset,
            pooling as the maximum of the 2x2 strided views, Adam in place
  tw-numpy  TensorWeaver on numpy: tw.nn modules, F.cross_entropy, tw.optim.Adam

Both start from the same weights; after one step their losses and weights are checked
against each other. Target: tw-numpy within 1.15x of NumPy by hand (issue 16).
"""

from __future__ import annotations

import harness
import mlp_step
import numpy as np
import tensorweaver as tw
import tensorweaver.nn.functional as TF
import torch_models
from numpy.lib.stride_tricks import sliding_window_view

LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8
TARGET = 1.15
OFFSETS = ((0, 0), (0, 1), (1, 0), (1, 1))  # of a 2x2 pooling window


def conv_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """3x3 convolution, padding 1: the output and the (N, C*9, H*W) columns it was made of."""
    n, c, h, width = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((n, c, 3, 3, h, width), dtype=x.dtype)
    np.copyto(cols, sliding_window_view(xp, (3, 3), axis=(2, 3)).transpose(0, 1, 4, 5, 2, 3))
    cols = cols.reshape(n, c * 9, h * width)
    out = np.matmul(w.reshape(len(w), -1), cols)  # (N, O, H*W): already NCHW
    out += b[:, None]
    return out.reshape(n, len(w), h, width), cols


def conv_backward(
    g: np.ndarray, cols: np.ndarray, w: np.ndarray, need_input: bool
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Gradients of conv_forward's input (if ``need_input``), weight and bias."""
    n, o, h, width = g.shape
    g = g.reshape(n, o, h * width)
    gw = np.matmul(g, cols.transpose(0, 2, 1)).sum(0).reshape(w.shape)
    gb = g.sum((0, 2))
    if not need_input:
        return None, gw, gb
    c = w.shape[1]
    gcols = np.matmul(w.reshape(o, -1).T, g).reshape(n, c, 3, 3, h, width)
    gxp = np.zeros((n, c, h + 2, width + 2), dtype=g.dtype)
    for i in range(3):
        for j in range(3):
            gxp[:, :, i : i + h, j : j + width] += gcols[:, :, i, j]
    return gxp[:, :, 1:-1, 1:-1], gw, gb


def pool_forward(x: np.ndarray) -> np.ndarray:
    """2x2 max pooling, stride 2."""
    out = np.maximum(x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2])
    np.maximum(out, x[:, :, 1::2, 0::2], out=out)
    np.maximum(out, x[:, :, 1::2, 1::2], out=out)
    return out


def pool_backward(g: np.ndarray, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The gradient goes to every maximum of its window. Tied maxima here are the zeros
    ReLU made, whose gradient ReLU's backward then zeroes: as good as PyTorch's first one."""
    gx = np.empty_like(x)
    for i, j in OFFSETS:
        np.multiply(g, x[:, :, i::2, j::2] == out, out=gx[:, :, i::2, j::2])
    return gx


class NumpyCNN:
    """The CNN with its gradients and Adam written by hand."""

    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = [p.copy() for p in params]
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        n = x.shape[0]
        z1, cols1 = conv_forward(x, w1, b1)
        h1 = np.maximum(z1, 0)
        p1 = pool_forward(h1)
        z2, cols2 = conv_forward(p1, w2, b2)
        h2 = np.maximum(z2, 0)
        p2 = pool_forward(h2)
        flat = p2.reshape(n, -1)
        z3 = flat @ w3.T
        z3 += b3
        z3 -= z3.max(axis=1, keepdims=True)
        e = np.exp(z3)
        total = e.sum(axis=1, keepdims=True)
        rows = np.arange(n)
        loss = float(np.log(total[:, 0]).mean() - z3[rows, y].mean())
        g3 = e
        g3 /= total
        g3[rows, y] -= 1
        g3 /= n
        gw3, gb3 = g3.T @ flat, g3.sum(axis=0)
        gp2 = (g3 @ w3).reshape(p2.shape)
        gh2 = pool_backward(gp2, h2, p2)
        gh2 *= z2 > 0
        gp1, gw2, gb2 = conv_backward(gh2, cols2, w2, True)
        gh1 = pool_backward(gp1, h1, p1)
        gh1 *= z1 > 0
        _, gw1, gb1 = conv_backward(gh1, cols1, w1, False)
        self.adam((gw1, gb1, gw2, gb2, gw3, gb3))
        return loss

    def adam(self, grads: tuple[np.ndarray, ...]) -> None:
        """PyTorch's Adam (no weight decay, not amsgrad), in place."""
        self.t += 1
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            adam_update(p, g, m, v, self.t)


def adam_update(
    p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, lr: float = LR
) -> None:
    """Step ``t`` of PyTorch's Adam on one parameter, in place (``g`` is overwritten)."""
    (b1, b2), step_size = BETAS, lr / (1 - BETAS[0] ** t)
    m *= b1
    m += (1 - b1) * g
    v *= b2
    g *= g
    g *= 1 - b2
    v += g
    denom = np.sqrt(v)
    denom /= np.sqrt(1 - b2**t)
    denom += EPS
    np.divide(m, denom, out=denom)
    denom *= step_size
    p -= denom


def tw_trainer(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> mlp_step.Trainer:
    """The tw-numpy step: torch_models.cnn built from tw.nn, with ``params``."""
    with tw.device("numpy"):
        model = torch_models.cnn(tw)
    with tw.no_grad():
        for p, host in zip(model.parameters(), params):
            p.copy_(tw.tensor(host, device="numpy"))
    optim = tw.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    data = tw.tensor(x, device="numpy"), tw.tensor(y, device="numpy")
    return mlp_step.Trainer(model, optim, TF.cross_entropy, *data)


def init_weights(rng: np.random.Generator) -> list[np.ndarray]:
    """[W1, b1, W2, b2, W3, b3], drawn as PyTorch's default initialisation does."""
    shapes = (((16, 1, 3, 3), 9), ((32, 16, 3, 3), 144), ((10, 32 * 7 * 7), 32 * 7 * 7))
    params = []
    for shape, fan_in in shapes:
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, shape).astype(np.float32))
        params.append(rng.uniform(-bound, bound, shape[0]).astype(np.float32))
    return params


def main() -> None:
    p = harness.parser(__doc__, repeat=11, sample_ms=300)
    p.add_argument("--batch", type=int, default=torch_models.CNN_BATCH)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    params = init_weights(rng)
    x = rng.standard_normal((args.batch, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, args.batch)
    by_hand, ours = NumpyCNN(params), tw_trainer(params, x, y)

    want, got = by_hand.step(x, y), float(ours.step().item())
    if not np.isclose(got, want, rtol=1e-4):
        raise AssertionError(f"tw-numpy's first loss {got} != NumPy's {want}")
    worst = 0.0
    for a, b in zip(ours.parameters(), by_hand.params):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
        worst = max(worst, float(np.abs(a - b).max()))

    medians = harness.measure({"numpy": lambda: by_hand.step(x, y), "tw-numpy": ours.step}, args)
    ms = {name: t * 1e3 for name, t in medians.items()}
    print(harness.describe(args))
    print(
        f"CNN 2x conv 3x3, 28x28, batch {args.batch}, float32, Adam step; after one step both "
        f"agree (largest weight difference {worst:.1e})"
    )
    for name in ("numpy", "tw-numpy"):
        print(f"  {name:10s}{ms[name]:9.2f} ms/step")
    r = ms["tw-numpy"] / ms["numpy"]
    print(f"tw-numpy / numpy by hand  {r:5.2f}x  ({harness.verdict(r, TARGET)})")


if __name__ == "__main__":
    main()
