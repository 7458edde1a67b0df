"""tw.masked against torch.masked (PyTorch 2.13): values, dtypes and gradients of every
reduction and normalization, under full, partial, broadcast and absent masks, and float64
gradients by finite differences."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck, gradgradcheck
from tensor_reference import grads_like_torch, like_torch

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))
#: Row 1 is fully masked out: the identity (or NaN) of each reduction shows there.
MASK = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], dtype=bool)
#: A mask with at least one masked-in element per row and per column, for finite differences.
DENSE_MASK = np.array([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 0, 1]], dtype=bool)
#: Masks broadcast to X's shape: one per column, one per row, and none.
MASKS = {
    "full": MASK,
    "columns": np.array([True, False, True, True]),
    "rows": np.array([[True], [False], [True]]),
    "none": None,
}

#: name -> call with dims (reductions take ``dim`` and ``keepdim``; normalizations one dim).
Call = Callable[..., Any]


def _reduction(name: str) -> Call:
    return lambda m, x, dim, keepdim, mask: getattr(m.masked, name)(
        x, dim, keepdim=keepdim, mask=mask
    )


REDUCTIONS: dict[str, Call] = {
    name: _reduction(name)
    for name in ("sum", "prod", "amax", "amin", "mean", "logsumexp", "var", "std")
}
REDUCTIONS["norm"] = lambda m, x, dim, keepdim, mask: m.masked.norm(
    x, 3.0, dim, keepdim=keepdim, mask=mask
)
REDUCTIONS["var_unbiased_false"] = lambda m, x, dim, keepdim, mask: m.masked.var(
    x, dim, False, keepdim=keepdim, mask=mask
)
REDUCTIONS["var_correction_half"] = lambda m, x, dim, keepdim, mask: m.masked.var(
    x, dim, correction=0.5, keepdim=keepdim, mask=mask
)
REDUCTIONS["std_correction_0"] = lambda m, x, dim, keepdim, mask: m.masked.std(
    x, dim, correction=0, keepdim=keepdim, mask=mask
)
#: Reductions over one dim only.
SINGLE_DIM: dict[str, Call] = {name: _reduction(name) for name in ("argmax", "argmin", "median")}
NORMALIZATIONS: dict[str, Call] = {
    name: (lambda m, x, dim, mask, name=name: getattr(m.masked, name)(x, dim, mask=mask))
    for name in ("softmax", "log_softmax", "softmin", "cumsum", "cumprod")
}
NORMALIZATIONS["normalize"] = lambda m, x, dim, mask: m.masked.normalize(x, 2.0, dim, mask=mask)
NORMALIZATIONS["normalize_ord1_eps"] = lambda m, x, dim, mask: m.masked.normalize(
    x, 1.0, dim, eps=0.5, mask=mask
)


def _mask(m: Any, mask: np.ndarray | None) -> Any:
    return None if mask is None else m.tensor(mask)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_like_torch(backend: str, name: str, mask: str) -> None:
    fn = REDUCTIONS[name]
    for dim, keepdim in ((None, False), (1, False), (-2, True), ((0, -1), False), ((), True)):
        like_torch(lambda m, x, d=dim, k=keepdim: fn(m, x, d, k, _mask(m, MASKS[mask])), X)
    grads_like_torch(lambda m, x: fn(m, x, 1, False, _mask(m, MASKS[mask])), X)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("name", sorted(SINGLE_DIM))
def test_single_dim_reduction_like_torch(backend: str, name: str, mask: str) -> None:
    fn = SINGLE_DIM[name]
    for dim, keepdim in ((1, False), (-2, True), (0, False)):
        like_torch(lambda m, x, d=dim, k=keepdim: fn(m, x, d, k, _mask(m, MASKS[mask])), X)
    if name == "median":
        grads_like_torch(lambda m, x: fn(m, x, 1, False, _mask(m, MASKS[mask])), X)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("name", sorted(NORMALIZATIONS))
def test_normalization_like_torch(backend: str, name: str, mask: str) -> None:
    fn = NORMALIZATIONS[name]
    for dim in (1, -2):
        like_torch(lambda m, x, d=dim: fn(m, x, d, _mask(m, MASKS[mask])), X)
    grads_like_torch(lambda m, x: fn(m, x, 1, _mask(m, MASKS[mask])), X)


def test_logaddexp_like_torch(backend: str) -> None:
    other = RNG.standard_normal((4,))
    masks = (MASK, None, np.array([True, False, True, False]))
    for input_mask in masks:
        for other_mask in masks[1:]:

            def fn(m: Any, x: Any, y: Any, xm: Any = input_mask, ym: Any = other_mask) -> Any:
                return m.masked.logaddexp(x, y, input_mask=_mask(m, xm), other_mask=_mask(m, ym))

            like_torch(fn, X, other)
            grads_like_torch(fn, X, other)


@pytest.mark.parametrize(
    "name", sorted({*REDUCTIONS, *SINGLE_DIM} - {"argmax", "argmin"} | set(NORMALIZATIONS))
)
def test_float64_gradients_by_finite_differences(backend: str, name: str) -> None:
    """Partially masked rows and columns (each keeps at least one element): the gradient
    is zero at masked-out elements of reductions and matches finite differences elsewhere."""
    mask = tw.tensor(DENSE_MASK)
    if name in NORMALIZATIONS:
        # Masked-out outputs are undefined (-inf for log_softmax): only masked-in ones count.
        gradcheck(lambda x: tw.where(mask, NORMALIZATIONS[name](tw, x, 1, mask), 0.0), X)
    elif name in SINGLE_DIM:
        gradcheck(lambda x: SINGLE_DIM[name](tw, x, -1, True, mask), X)
    else:
        gradcheck(lambda x: REDUCTIONS[name](tw, x, (0, 1), False, mask), X)
        gradcheck(lambda x: REDUCTIONS[name](tw, x, 0, True, mask), X)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "cumprod", "normalize", "var"])
def test_float64_second_derivatives_by_finite_differences(backend: str, name: str) -> None:
    mask = tw.tensor(DENSE_MASK)
    if name in NORMALIZATIONS:
        gradgradcheck(lambda x: tw.where(mask, NORMALIZATIONS[name](tw, x, 1, mask), 0.0), X)
    else:
        gradgradcheck(lambda x: REDUCTIONS[name](tw, x, 1, False, mask), X)
