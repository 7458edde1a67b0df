"""tw.linalg on torch:cpu against the same calls in torch.linalg (issue 14).

Run: python benchmarks/linalg_ops.py [--repeat 11] [--threads 1] [--n 64] [--batch 8]

Each workload is a linear-algebra function on a batch of ``--batch`` matrices of ``--n`` x
``--n`` (float64, made well conditioned), written once against ``torch`` and once against
``tensorweaver`` on the torch backend, timed as a forward pass (fwd) and as a forward and
backward pass (fwd+bwd); the two run interleaved (see harness.py) and the ratio is
TensorWeaver's time over torch's. The goal is at most 1.10x: the torch backend computes each
whole function with torch's own kernel and gradient (``linalg_function`` in the IR), so the
core adds only its graph, checks and wrappers.

On this project's 2-core machine, shared with other jobs (one thread, CPU clock; medians of
three runs, the ratio's range over them), 8 x 64 x 64, in ms (torch, tw) and ratio:

| workload | fwd | fwd+bwd |
|---|---|---|
| cholesky | 0.169, 0.220: 1.19x (1.19-1.30) | 1.21, 1.41: 1.17x (1.13-1.21) |
| solve | 0.255, 0.297: 1.16x (1.16-1.19) | 0.53, 0.68: 1.29x (1.28-1.37) |
| cholesky_solve (two calls) | 0.204, 0.262: 1.28x (1.24-1.33) | 1.75, 2.12: 1.22x (1.21-1.27) |
| inv | 0.606, 0.670: 1.09x (1.06-1.13) | 1.34, 1.59: 1.13x (1.09-1.19) |
| det | 0.241, 0.278: 1.08x (1.03-1.15) | 1.23, 1.32: 1.16x (1.07-1.20) |
| slogdet | 0.213, 0.263: 1.20x (1.18-1.30) | 0.84, 0.94: 1.13x (1.12-1.39) |
| eigvalsh | 0.886, 1.021: 1.06x (1.04-1.22) | 3.09, 3.30: 1.06x (1.04-1.07) |
| eigh (both outputs) | 2.59, 2.64: 1.02x (0.98-1.06) | 4.44, 5.20: 1.17x (1.10-1.17) |
| qr (R) | 1.18, 1.07: 0.91x (0.90-1.06) | 2.23, 2.33: 1.05x (1.03-1.23) |
| svdvals | 1.69, 1.81: 1.07x (1.05-1.09) | 5.23, 5.27: 1.07x (1.01-1.17) |
| lu_factor | 0.186, 0.212: 1.16x (1.13-1.24) | 1.70, 2.04: 1.15x (1.09-1.20) |
| solve_triangular | 0.021, 0.029: 1.39x (1.38-1.82) | 0.165, 0.236: 1.43x (1.36-1.45) |
| pinv | 4.36, 4.50: 1.03x (1.03-1.06) | 8.13, 8.76: 1.03x (1.02-1.11) |
| matrix_exp | 2.59, 2.74: 1.02x (0.98-1.07) | 21.8, 22.9: 1.01x (1.00-1.05) |

What is left is a fixed cost per call, about 10-50 us forward and 50-100 us forward and
backward on this loaded machine (the core's op wrappers, its sum and autograd engine, the
replay of torch's backward, the read-back of LAPACK's info): it decides the ratio of the
calls under ~1 ms. With --n 128 (one run) all are within 1.10x but solve_triangular
(1.20x, 1.18x), solve (1.15x, 1.15x), cholesky's forward (1.17x; 1.06x with backward) and
eigh's forward and backward (1.13x). ``eigh`` with both
outputs used replays torch's backward once per output (one graph node each). Before the
whole functions (the core composing the primitives, one run): forward and backward 1.32x
(cholesky), 1.75x (solve), 1.50x (cholesky_solve), 1.62x (inv), 1.53x (slogdet), 1.54x
(eigvalsh), 1.76x (qr, through R's diagonal), 1.45x (svdvals), 0.68x (matrix_exp).
"""

from __future__ import annotations

from typing import Any, Callable

import harness  # noqa: I001  (first: sets thread counts before numpy and torch load)
import numpy as np
import tensorweaver as tw
import torch

TARGET = 1.10

#: name -> f(lib, a, b): a scalar to differentiate; a is symmetric positive definite, b (n, 3).
WORKLOADS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "cholesky": lambda m, a, b: m.linalg.cholesky(a).sum(),
    "solve": lambda m, a, b: m.linalg.solve(a, b).sum(),
    "cholesky_solve": lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(a)).sum(),
    "inv": lambda m, a, b: m.linalg.inv(a).sum(),
    "det": lambda m, a, b: m.linalg.det(a / a.shape[-1]).sum(),
    "slogdet": lambda m, a, b: m.linalg.slogdet(a)[1].sum(),
    "eigvalsh": lambda m, a, b: m.linalg.eigvalsh(a).sum(),
    "eigh": lambda m, a, b: _both(m.linalg.eigh(a)),
    "qr": lambda m, a, b: m.linalg.qr(a)[1].sum(),
    "svdvals": lambda m, a, b: m.linalg.svdvals(a).sum(),
    "lu_factor": lambda m, a, b: m.linalg.lu_factor(a)[0].sum(),
    "solve_triangular": lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True).sum(),
    "pinv": lambda m, a, b: m.linalg.pinv(a).sum(),
    "matrix_exp": lambda m, a, b: m.linalg.matrix_exp(a / a.shape[-1]).sum(),
}


def _both(pair: Any) -> Any:
    """Both outputs of a factorization in one scalar (each gets a gradient)."""
    return pair[0].sum() + pair[1].sum()


def _step(
    fn: Callable[[Any, Any, Any], Any], lib: Any, a: Any, b: Any, backward: bool
) -> Callable[[], None]:
    """One forward pass of ``fn`` on ``lib``'s tensors ``a`` and ``b``, and with ``backward``
    the backward pass to them (leaves that require grad)."""

    def forward() -> None:
        fn(lib, a, b)

    def step() -> None:
        fn(lib, a, b).backward()
        a.grad = b.grad = None

    return step if backward else forward


def main() -> None:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=64, help="matrix size")
    p.add_argument("--batch", type=int, default=8, help="matrices per batch")
    p.add_argument("--only", default="", help="comma-separated workload names")
    args = p.parse_args()
    harness.setup_torch(torch)
    tw.set_backend("torch:cpu")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, args.n, args.n))
    spd = x @ np.swapaxes(x, -1, -2) + args.n * np.eye(args.n)
    rhs = rng.standard_normal((args.batch, args.n, 3))
    print(harness.describe(args, torch))
    names = [n for n in args.only.split(",") if n] or list(WORKLOADS)
    for name in names:
        for backward in (False, True):
            candidates = {
                label: _step(WORKLOADS[name], m, *_leaves(m, (spd, rhs), backward), backward)
                for label, m in (("torch", torch), ("tw-torch", tw))
            }
            times = harness.measure(candidates, args)
            ours, theirs = times["tw-torch"], times["torch"]
            what = f"{name} {'fwd+bwd' if backward else 'fwd'}"
            print(
                f"{what:24s} torch {theirs * 1e3:8.3f} ms  tw-torch {ours * 1e3:8.3f} ms  "
                f"{harness.ratio(ours, theirs)}  ({harness.verdict(ours / theirs, TARGET)})"
            )


def _leaves(lib: Any, arrays: tuple, grad: bool) -> list:
    return [lib.tensor(x, requires_grad=grad) for x in arrays]


if __name__ == "__main__":
    main()
