"""tw.linalg on torch:cpu against the same calls in torch.linalg (issue 14).

Run: python benchmarks/linalg_ops.py [--repeat 11] [--threads 1] [--n 64] [--batch 8]

Each workload is one forward and backward pass through a linear-algebra function on a
batch of ``--batch`` matrices of ``--n`` x ``--n`` (float64, made well conditioned), written
once against ``torch`` and once against ``tensorweaver`` on the torch backend; the two run
interleaved (see harness.py) and the ratio is TensorWeaver's time over torch's. The goal is
at most 1.10x: the core adds its graph and checks on top of the very same torch kernels.
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
    "slogdet": lambda m, a, b: m.linalg.slogdet(a)[1].sum(),
    "eigh": lambda m, a, b: m.linalg.eigvalsh(a).sum(),
    "qr": lambda m, a, b: m.linalg.qr(a)[1].diagonal(dim1=-2, dim2=-1).abs().sum(),
    "svdvals": lambda m, a, b: m.linalg.svdvals(a).sum(),
    "matrix_exp": lambda m, a, b: m.linalg.matrix_exp(a / a.shape[-1]).sum(),
}


def _step(fn: Callable[[Any, Any, Any], Any], lib: Any, a: Any, b: Any) -> Callable[[], None]:
    """One forward and backward pass of ``fn`` on ``lib``'s leaves ``a`` and ``b``."""

    def step() -> None:
        fn(lib, a, b).backward()
        a.grad = b.grad = None

    return step


def main() -> None:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=64, help="matrix size")
    p.add_argument("--batch", type=int, default=8, help="matrices per batch")
    p.add_argument("--only", default="", help="comma-separated workload names")
    args = p.parse_args()
    harness.setup_torch(torch)
    tw.set_backend("torch:cpu")
    rng = np.random.default_rng(0)
    m = rng.standard_normal((args.batch, args.n, args.n))
    spd = m @ np.swapaxes(m, -1, -2) + args.n * np.eye(args.n)
    rhs = rng.standard_normal((args.batch, args.n, 3))
    print(harness.describe(args, torch))
    names = [n for n in args.only.split(",") if n] or list(WORKLOADS)
    for name in names:
        fn = WORKLOADS[name]
        a_tw = tw.tensor(spd, requires_grad=True)
        b_tw = tw.tensor(rhs, requires_grad=True)
        a_t = torch.tensor(spd, requires_grad=True)
        b_t = torch.tensor(rhs, requires_grad=True)

        times = harness.measure(
            {"torch": _step(fn, torch, a_t, b_t), "tw-torch": _step(fn, tw, a_tw, b_tw)}, args
        )
        r = times["tw-torch"] / times["torch"]
        print(
            f"{name:15s} torch {times['torch'] * 1e3:8.3f} ms  tw-torch "
            f"{times['tw-torch'] * 1e3:8.3f} ms  {harness.ratio(times['tw-torch'], times['torch'])}"
            f"  ({harness.verdict(r, TARGET)})"
        )


if __name__ == "__main__":
    main()
