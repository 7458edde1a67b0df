"""Review of the commit on negative-order norms, cumprod's sequential products and gradient,
and logaddexp's gradient: regression tests for what it left different from torch 2.13, each
compared with real torch on every backend (the ``backend`` fixture)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

INF, NAN = math.inf, math.nan


def _close(ours: Any, theirs: Any, rtol: float = 1e-12, atol: float = 1e-12) -> None:
    np.testing.assert_allclose(
        np.asarray(ours.detach().tolist(), dtype=np.complex128),
        theirs.detach().resolve_conj().cdouble().numpy(),
        rtol=rtol,
        atol=atol,
        equal_nan=True,
    )


# Traced with ordinary values, replayed with infinities, zeros, overflows and NaNs.
REPLAYED = [
    [1.0, 2.0, 3.0, 4.0],
    [2.0, 3.0, 4.0, 5.0],
    [1e308, 1e308, 0.0, 2.0],
    [3.0, 0.0, 2.0, 0.0],
    [0.0, 1e308, 1e308, 1.0],
    [1.0, INF, 0.0, -2.0],
    [2.0, NAN, 0.0, 1.0],
]


def test_cumprod_compiles_whole_and_replays_like_torch(backend: str) -> None:
    """The cleanup pass read ``all(isfinite(out) & out != 0)`` into Python (and the backward
    ``any(x == 0)``): ``tw.compile(fullgraph=True)`` of a step with cumprod raised HostRead
    (it compiled before the commit), and other modes replayed with a host read per call."""

    def step(x: Any) -> Any:
        out = tw.cumprod(x, 0) * 2
        out.sum().backward()
        return out.detach()

    # (backend "tensorweaver": the replay itself, without the torch backend's inductor)
    compiled = tw.compile(step, fullgraph=True, backend="tensorweaver")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for data in REPLAYED:
            x = tw.tensor(data, dtype=tw.float64, requires_grad=True)
            ours = compiled(x)
            xt = torch.tensor(data, dtype=torch.float64, requires_grad=True)
            theirs = torch.cumprod(xt, 0) * 2
            theirs.sum().backward()
            _close(ours, theirs)
            _close(x.grad, xt.grad)
    assert compiled.traces == 2  # traced twice, then replayed for every other input


@pytest.mark.parametrize("dim", [1, -2, 5])
def test_cumprod_of_0d_checks_dim_like_torch(backend: str, dim: int) -> None:
    """cumprod of a 0-d tensor returned it for any dim; torch raises IndexError (as cumsum's)."""
    for m in (torch, tw):
        with pytest.raises(IndexError, match="ange of \\[-1, 0\\], but got"):
            m.cumprod(m.tensor(3.0), dim)
    for dim_ok in (0, -1):
        assert tw.cumprod(tw.tensor(3.0), dim_ok).item() == 3.0


@pytest.mark.xfail(
    strict=True,
    reason="complex cumprod is a log-depth scan of complex products: torch multiplies in "
    "order from 1 with the naive (ac - bd, ad + bc), so 1 * (inf + inf j) is NaN there and "
    "an overflow followed by a zero is NaN; here inf + inf j and 0 (no cleanup pass for "
    "complex infinities)",
)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_cumprod_complex_infinities_like_torch(backend: str, dtype: str) -> None:
    for data in ([complex(INF, INF), 1 + 0j, 0j], [1e200 + 1e200j, 1e200j, 0j, 1j]):
        ours = tw.cumprod(tw.tensor(data, dtype=getattr(tw, dtype)), 0)
        theirs = torch.cumprod(torch.tensor(data, dtype=getattr(torch, dtype)), 0)
        _close(ours, theirs)


def test_two_norm_second_derivative_over_zero_slice_like_torch(backend: str) -> None:
    found = []
    for m in (tw, torch):
        x = m.tensor([[0.0, 0.0], [1.0, -2.0]], dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad(m.linalg.vector_norm(x, 2, dim=1).sum(), x, create_graph=True)
        (h,) = m.autograd.grad(g.sum(), x)
        found.append((g, h))
    _close(found[0][0], found[1][0])
    _close(found[0][1], found[1][1], atol=1e-9)


def test_cumsum_checks_dim_before_refusing_bool_like_torch():
    # tw raised NotImplementedError (bool) where torch raises IndexError (dim) first
    for lib in (torch, tw):
        with pytest.raises(IndexError):
            lib.cumsum(lib.tensor([1.0, 2.0]), 5, dtype=lib.bool)
