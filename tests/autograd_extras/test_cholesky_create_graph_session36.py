"""cholesky under create_graph on its own factor (torch:cpu's whole call as numpy's path):
first and second order, lower and upper, batched, float32/float64, after a write through
the factor's or the input's ``.data``, compared with torch 2.13."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import same_each


def _program(upper: bool, dtype: str, target: str | None) -> Any:
    def program(m: Any) -> Any:
        x = (m.arange(12.0, dtype=getattr(m, dtype)).reshape(2, 2, 3) / 7).sin()
        x = (x + m.eye(2, 3, dtype=x.dtype) * 2).requires_grad_()
        a = x @ x.mT
        factor = m.linalg.cholesky(a, upper=upper)
        if target is not None:
            (factor if target == "factor" else a).data.mul_(2)
        weights = m.arange(1.0, 9.0, dtype=x.dtype).reshape(2, 2, 2)
        (g,) = m.autograd.grad((factor * weights).sum(), x, create_graph=True)
        return g, m.autograd.grad((g * g).sum(), x)

    return program


#: dtype -> (its programs, the decimals compared: float32's rounding order differs)
_PROGRAMS = {
    dtype: (
        {
            f"{upper}-{target}": _program(upper, dtype, target)
            for upper in (False, True)
            for target in (None, "factor", "input")
        },
        decimals,
    )
    for dtype, decimals in (("float32", 2), ("float64", 8))
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_cholesky_create_graph_reads_its_factor(spec: str, dtype: str) -> None:
    programs, decimals = _PROGRAMS[dtype]
    same_each(programs, spec, decimals=decimals)
