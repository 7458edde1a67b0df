"""Reader r2's linalg findings (session 32): saved_tensors_hooks see linalg.lu's L, P, U in
torch's order; lu_unpack's factors are LuUnpackBackward0; cond is the ratio of the first and
last singular values; each as torch 2.13's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from snippet_outcomes import same


def _matrix(m: Any, shape: tuple) -> Any:
    n = int(np.prod(shape))
    a = (m.arange(float(n), dtype=m.float64).reshape(shape) * 0.37).sin()
    return (a + m.eye(shape[-2], shape[-1], dtype=m.float64)).requires_grad_()


@pytest.mark.parametrize("shape", [(5, 3), (3, 3)])
def test_lu_packs_l_p_u_in_torch_order(backend: str, shape: tuple) -> None:
    def program(m: Any) -> Any:
        a = _matrix(m, shape)
        packed = []

        def pack(t: Any) -> Any:
            packed.append((tuple(t.shape), round(float(t.sum()), 6)))
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            m.linalg.lu(a)
        return packed

    same(program, backend)


def test_lu_unpack_grad_fn_name(backend: str) -> None:
    def program(m: Any) -> Any:
        lu, pivots = m.linalg.lu_factor(_matrix(m, (3, 3)))
        _, low, up = m.lu_unpack(lu, pivots)
        return type(low.grad_fn).__name__, type(up.grad_fn).__name__

    same(program, backend)


@pytest.mark.parametrize("p", [None, 2, -2])
def test_cond_is_the_ratio_of_first_and_last_singular_values(backend: str, p: Any) -> None:
    """Torch's graph and gradient: where singular values tie (cond(eye(3))) the gradient goes
    to the first and the last, not shared among the ties (was 0 at eye(3))."""

    def program(m: Any) -> Any:
        found = []
        for a in (m.eye(3), m.diag(m.tensor([2.0, 2.0, 1.0])), _matrix(m, (2, 3, 3)).detach()):
            t = a.to(m.float64).requires_grad_()
            c = m.linalg.cond(t, p)
            c.sum().backward()
            found.append((c, type(c.grad_fn).__name__, t.grad))
        return found

    same(program, backend, decimals=10)
