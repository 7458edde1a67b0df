"""Matmul-bound work on the cunumeric backend against NumPy, in one process (issue 5).

Run: python benchmarks/cunumeric_matmul.py [--size 2048] [--chain 4] [--batch 8192]
                                           [--repeat 5] [--threads 1] [--clock wall|cpu]

Two workloads, float32:

  chain  c = a, then c = c @ b ``--chain`` times, for ``--size`` square matrices (b is
         scaled by 1/sqrt(size) so that the values stay near 1); the result is fetched
         to the host. 4096 is the issue's size; 2048 is the default because one
         4096 matmul takes seconds on one CPU.
  mlp    one SGD step of benchmarks/mlp_step.py's MLP (784-512-512-10) at ``--batch``.

Candidates: NumPy (by hand for the MLP), cuPyNumeric by hand (the same code on its
arrays), TensorWeaver on numpy, TensorWeaver on cunumeric. The cunumeric backend is
selected with ``tw.device("cunumeric")`` and configures Legate itself (on a machine without
a GPU: one CPU, see ``tw devices``). Legate runs its tasks asynchronously, so every
cuPyNumeric candidate ends with a blocking execution fence. Legate's threads are its own:
``--threads`` sets NumPy's BLAS only; set LEGATE_CONFIG for more Legate CPUs. The wall
clock is the default (Legate computes on threads of its own).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import harness
import mlp_step
import numpy as np
import tensorweaver as tw


def legate_setup() -> tuple[Any, Callable[[], None], str]:
    """cuPyNumeric (after tw configured Legate), a blocking fence, and Legate's settings."""
    with tw.device("cunumeric"):
        tw.zeros(1)  # creates the backend: Legate starts, configured by the plugin
    import cupynumeric
    from legate.core import get_legate_runtime

    runtime = get_legate_runtime()
    config = os.environ.get("LEGATE_CONFIG", "unset (Legate's automatic configuration)")
    return cupynumeric, lambda: runtime.issue_execution_fence(block=True), config


def chain_candidates(size: int, chain: int, cn: Any, fence: Callable[[], None]) -> dict:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)

    def by_hand(a: Any, b: Any, to_host: Callable[[Any], Any]) -> Callable[[], Any]:
        def run() -> Any:
            c = a
            for _ in range(chain):
                c = c @ b
            return to_host(c)

        return run

    def on_cunumeric(run: Callable[[], Any]) -> Callable[[], Any]:
        def fenced() -> Any:
            out = run()
            fence()
            return out

        return fenced

    tw_np = [tw.tensor(m) for m in (a, b)]
    tw_cn = [tw.tensor(m, device="cunumeric") for m in (a, b)]
    return {
        "numpy": by_hand(a, b, lambda c: c),
        "cupynumeric": on_cunumeric(by_hand(cn.array(a), cn.array(b), np.asarray)),
        "tw-numpy": by_hand(*tw_np, lambda c: c.numpy()),
        "tw-cunumeric": on_cunumeric(by_hand(*tw_cn, lambda c: c.numpy())),
    }


def mlp_candidates(batch: int, cn: Any, fence: Callable[[], None]) -> dict:
    rng = np.random.default_rng(0)
    params = mlp_step.init_weights(rng)
    x = rng.standard_normal((batch, mlp_step.SIZES[0])).astype(np.float32)
    y = rng.integers(0, mlp_step.SIZES[-1], batch)
    numpy_mlp, cn_mlp = mlp_step.NumpyMLP(params), mlp_step.NumpyMLP(params, cn)
    cx, cy = cn.array(x), cn.array(y)
    trainers = {
        device: mlp_step.tw_trainer(mlp_step.tw_mlp(params, device), x, y, device)
        for device in ("numpy", "cunumeric")
    }

    def cn_step() -> None:
        cn_mlp.step(cx, cy)
        fence()

    def tw_cn_step() -> None:
        trainers["cunumeric"].step()
        fence()

    return {
        "numpy": lambda: numpy_mlp.step(x, y),
        "cupynumeric": cn_step,
        "tw-numpy": trainers["numpy"].step,
        "tw-cunumeric": tw_cn_step,
    }


def report(title: str, seconds: dict[str, float]) -> None:
    print(title)
    base = seconds["numpy"]
    for name, t in seconds.items():
        print(f"  {name:13s}{t * 1e3:10.1f} ms  {harness.ratio(t, base)} NumPy")
    print(
        f"  tw-cunumeric / cupynumeric by hand "
        f"{harness.ratio(seconds['tw-cunumeric'], seconds['cupynumeric'])}"
    )


def main() -> None:
    p = harness.parser(__doc__, repeat=5, sample_ms=1, clock="wall")
    p.add_argument("--size", type=int, default=2048, help="matrix size of the chain")
    p.add_argument("--chain", type=int, default=4, help="matmuls in the chain")
    p.add_argument("--batch", type=int, default=8192, help="MLP batch size")
    args = p.parse_args()
    cn, fence, config = legate_setup()
    chain = harness.measure(chain_candidates(args.size, args.chain, cn, fence), args)
    mlp = harness.measure(mlp_candidates(args.batch, cn, fence), args)

    print(harness.describe(args) + f"; LEGATE_CONFIG: {config}")
    report(f"chain of {args.chain} matmuls, {args.size}x{args.size} float32:", chain)
    report(f"MLP {'-'.join(map(str, mlp_step.SIZES))} SGD step, batch {args.batch}:", mlp)


if __name__ == "__main__":
    main()
