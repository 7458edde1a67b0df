"""Values of the reductions, distances, linear algebra and transforms on PyTorch's CPU float32
autocast list (tensorweaver.amp.CPU_FLOAT32), and of linalg.vecdot on its lower-precision
list, under CPU autocast against PyTorch 2.13 on the same bfloat16 and float16 inputs.

Before: prod, trace, cdist, inverse, qr, svd, pinverse and the FFTs computed in (or refused)
the inputs' low dtype, vecdot in float32 inputs' dtype (tests/amp/test_sweep_amp.py compares
the dtypes of more spellings); cdist's matmul path and pinverse's products were lowered to
the autocast dtype inside the float32 computation.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4, 4)).astype(np.float32)
B = RNG.standard_normal((3, 30, 4)).astype(np.float32)  # > 25 rows: cdist by matmul

OPS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "prod": lambda m, a, b: m.prod(a * 0.5 + 1, 1),
    "trace": lambda m, a, b: m.trace(a[0]),
    "cdist": lambda m, a, b: m.cdist(a, a),
    "cdist by matmul": lambda m, a, b: m.cdist(b, a),
    "inverse": lambda m, a, b: m.inverse(a[0] + 4 * m.eye(4, dtype=a.dtype)),
    "qr": lambda m, a, b: m.qr(a[0])[1].abs(),  # R up to the signs of its rows
    "svd values": lambda m, a, b: m.svd(a[0])[1],
    "linalg.svdvals": lambda m, a, b: m.linalg.svdvals(a),
    "pinverse": lambda m, a, b: m.pinverse(a[0]),
    "rfft": lambda m, a, b: m.fft.rfft(a).abs(),
    "fft2": lambda m, a, b: m.fft.fft2(a).abs(),
    "irfft": lambda m, a, b: m.fft.irfft(a),
    "vecdot": lambda m, a, b: m.linalg.vecdot(a, a),
}


def _run(m: Any, op: str, low: str, given: str) -> tuple[str, np.ndarray]:
    a = m.tensor(A).to(getattr(m, given))
    b = m.tensor(B).to(getattr(m, given))
    with m.autocast("cpu", dtype=getattr(m, low)):
        out = OPS[op](m, a, b)
    return str(out.dtype).rsplit(".", 1)[-1], np.asarray(out.detach().double())


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize(("low", "given"), [("bfloat16", "bfloat16"), ("float16", "float32")])
def test_value_under_autocast_like_torch(op: str, low: str, given: str) -> None:
    with tw.device("torch:cpu"):
        ours = _run(tw, op, low, given)
    theirs = _run(torch, op, low, given)
    assert ours[0] == theirs[0]
    tolerance = 1e-5 if ours[0] in ("float32", "complex64") else 2e-2
    np.testing.assert_allclose(ours[1], theirs[1], rtol=tolerance, atol=tolerance)
