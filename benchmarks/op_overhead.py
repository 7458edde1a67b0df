"""Per-op cost of small ops: TensorWeaver against the same op in NumPy and in PyTorch eager.

Run: python benchmarks/op_overhead.py [--repeat 21] [--sample-ms 5] [--clock cpu|wall] [--threads 1]

Ops on 16 float32 elements (``a + b``, ``a * b + c``, ``exp``, ``sum``, a reshape to 4x4)
and a 4x4 matmul, each timed as:

  numpy       the NumPy expression itself
  np-backend  the NumPy plugin's primitive methods (``backend.add(a, b)``), no Tensor
  tw-numpy    TensorWeaver on the numpy backend
  torch       PyTorch eager on the CPU
  torch-bknd  the torch plugin's primitive methods
  tw-torch    TensorWeaver on torch:cpu
  tw-np+grad  tw-numpy with inputs that require grad (a graph node is recorded)
  torch+grad  torch with inputs that require grad

Times are microseconds per op, medians of interleaved rounds, with the cost of the
benchmark's own call (an empty function with the same arguments) taken off. "Core
overhead" is what TensorWeaver adds over its backend's own call (tw - backend method);
"plugin" is what the backend method adds over the library's own call.
"""

from __future__ import annotations

from typing import Any, Callable

import harness
import numpy as np
import tensorweaver as tw
import torch

COLUMNS = (
    "numpy",
    "np-backend",
    "tw-numpy",
    "torch",
    "torch-bknd",
    "tw-torch",
    "tw-np+grad",
    "torch+grad",
)


def _exp(x: Any) -> Any:
    return np.exp(x) if isinstance(x, np.ndarray) else x.exp()


#: name -> (the op on library arrays or tw tensors, the op on a backend's primitives).
#: Operands: a, b, c of 16 elements; x, w of 4x4.
OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "a + b": (lambda a, b, c, x, w: a + b, lambda k, a, b, c, x, w: k.add(a, b)),
    "a * b + c": (
        lambda a, b, c, x, w: a * b + c,
        lambda k, a, b, c, x, w: k.add(k.mul(a, b), c),
    ),
    "a.exp()": (lambda a, b, c, x, w: _exp(a), lambda k, a, b, c, x, w: k.exp(a)),
    "a.sum()": (lambda a, b, c, x, w: a.sum(), lambda k, a, b, c, x, w: k.sum(a, (0,), False)),
    "x @ w (4x4)": (lambda a, b, c, x, w: x @ w, lambda k, a, b, c, x, w: k.matmul(x, w)),
    "a.reshape(4, 4)": (
        lambda a, b, c, x, w: a.reshape(4, 4),
        lambda k, a, b, c, x, w: k.reshape(a, (4, 4)),
    ),
}


def operands() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((16,),) * 3 + ((4, 4),) * 2]


def bind(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: fn(*args)


def _nothing(*args: Any) -> None:
    return None


def candidates(op: str, host: list[np.ndarray]) -> dict[str, Callable[[], Any]]:
    """One zero-argument function per column (and the empty-call baseline) for ``op``."""
    expr, prim = OPS[op]
    tw_np = [tw.tensor(h) for h in host]
    tw_th = [tw.tensor(h, device="torch:cpu") for h in host]
    th = [torch.from_numpy(h.copy()) for h in host]
    tw_np_grad = [tw.tensor(h, requires_grad=True) for h in host]
    th_grad = [torch.from_numpy(h.copy()).requires_grad_() for h in host]
    np_backend, torch_backend = tw_np[0].backend, tw_th[0].backend
    return {
        "empty": bind(_nothing, *host),
        "numpy": bind(expr, *host),
        "np-backend": bind(prim, np_backend, *host),
        "tw-numpy": bind(expr, *tw_np),
        "torch": bind(expr, *th),
        "torch-bknd": bind(prim, torch_backend, *th),
        "tw-torch": bind(expr, *tw_th),
        "tw-np+grad": bind(expr, *tw_np_grad),
        "torch+grad": bind(expr, *th_grad),
    }


def main() -> None:
    args = harness.parser(__doc__, repeat=21, sample_ms=5).parse_args()
    harness.setup_torch(torch)
    host = operands()
    results: dict[str, dict[str, float]] = {}
    for op in OPS:
        medians = harness.measure(candidates(op, host), args)
        empty = medians.pop("empty")
        results[op] = {n: (t - empty) * 1e6 for n, t in medians.items()}

    print(harness.describe(args, torch))
    print("µs per op, the benchmark's own call cost taken off")
    print(f"{'op':17s}" + "".join(f"{c:>11s}" for c in COLUMNS))
    for op, us in results.items():
        print(f"{op:17s}" + "".join(f"{us[c]:11.2f}" for c in COLUMNS))

    print()
    print("overheads (µs) and ratios")
    head = (
        "core/np",
        "plugin/np",
        "tw/numpy",
        "tw-np/torch",
        "core/torch",
        "plugin/th",
        "tw-th/torch",
        "graph tw",
        "graph torch",
    )
    print(f"{'op':17s}" + "".join(f"{h:>12s}" for h in head))
    for op, us in results.items():
        row = (
            f"{us['tw-numpy'] - us['np-backend']:12.2f}",
            f"{us['np-backend'] - us['numpy']:12.2f}",
            f"{harness.ratio(us['tw-numpy'], us['numpy']):>12s}",
            f"{harness.ratio(us['tw-numpy'], us['torch']):>12s}",
            f"{us['tw-torch'] - us['torch-bknd']:12.2f}",
            f"{us['torch-bknd'] - us['torch']:12.2f}",
            f"{harness.ratio(us['tw-torch'], us['torch']):>12s}",
            f"{us['tw-np+grad'] - us['tw-numpy']:12.2f}",
            f"{us['torch+grad'] - us['torch']:12.2f}",
        )
        print(f"{op:17s}" + "".join(row))
    print(
        "core = tw - backend method; plugin = backend method - library call; "
        "graph = cost of recording the graph (+grad - plain)"
    )


if __name__ == "__main__":
    main()
