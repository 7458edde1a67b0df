"""Reader r3, session 32: foreach ASGD on float16/bfloat16 parameters rounds each update once,
as torch's ``_foreach_addcmul_`` (computed in float) does."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import same


def _one_foreach_asgd_step(dtype: str, t0: float) -> Callable:
    def program(m: Any) -> Any:
        drawn = np.random.default_rng(1).standard_normal((3, 64))
        p = m.nn.Parameter(m.tensor(drawn[0], dtype=m.float32).to(getattr(m, dtype)))
        opt = m.optim.ASGD([p], lr=0.01, t0=t0, foreach=True)
        for row in drawn[1:]:
            p.grad = m.tensor(row, dtype=m.float32).to(getattr(m, dtype))
            opt.step()
        return p.detach().to(m.float64), opt.state[p]["ax"].to(m.float64)

    return program


@pytest.mark.parametrize(
    "device, dtype", [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")]
)
@pytest.mark.parametrize("t0", [1e6, 0.0])
def test_foreach_asgd_half_step_rounds_once(device: str, dtype: str, t0: float) -> None:
    same(_one_foreach_asgd_step(dtype, t0), device, decimals=None)
