"""Max, average and power-average pooling in 1, 2 and 3 dimensions against
torch.nn.functional: outputs, indices and gradients in float64 (float32 to its precision),
batched and unbatched, odd sizes, every option; errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from functional_reference import assert_close, check, gradcheck, randn
from tw_backends import entered

SHAPES = {1: (2, 3, 11), 2: (2, 3, 7, 6), 3: (2, 2, 5, 6, 7)}

MAX = [
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True, "return_indices": True},
    {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "dilation": 2, "padding": 1, "return_indices": True},
    {"kernel_size": 2, "stride": 1, "dilation": (1, 2, 2), "return_indices": True},
    {"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": (1, 0, 1), "return_indices": True},
]


def _for(nd: int, kwargs: dict) -> dict:
    """``kwargs`` with tuples cut to ``nd`` entries (their last ones)."""
    return {k: v[-nd:] if isinstance(v, tuple) else v for k, v in kwargs.items()}


@pytest.mark.parametrize("kwargs", MAX)
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool(backend: str, nd: int, kwargs: dict) -> None:
    kw = _for(nd, kwargs)
    check(lambda F, x: getattr(F, f"max_pool{nd}d")(x, **kw), randn(*SHAPES[nd]))


@pytest.mark.parametrize("kwargs", MAX[1:2] + MAX[5:])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_unbatched(backend: str, nd: int, kwargs: dict) -> None:
    kw = _for(nd, kwargs)
    check(lambda F, x: getattr(F, f"max_pool{nd}d")(x, **kw), randn(*SHAPES[nd][1:]))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_ties_send_the_gradient_to_the_first_maximum(backend: str, nd: int) -> None:
    x = np.round(randn(*SHAPES[nd]))
    check(lambda F, x: getattr(F, f"max_pool{nd}d")(x, 3, 2, 1, return_indices=True), x)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_with_indices_always_returns_indices(backend: str, nd: int) -> None:
    check(lambda F, x: getattr(F, f"max_pool{nd}d_with_indices")(x, 2), randn(*SHAPES[nd]))


AVG = [
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": (2, 3, 2), "stride": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "padding": 1, "divisor_override": 3},
]


@pytest.mark.parametrize(
    ("nd", "kwargs"),
    # avg_pool1d has no divisor_override, in PyTorch either.
    [(nd, kw) for nd in (1, 2, 3) for kw in AVG if nd > 1 or "divisor_override" not in kw],
)
def test_avg_pool(backend: str, nd: int, kwargs: dict) -> None:
    kw = _for(nd, kwargs)
    check(lambda F, x: getattr(F, f"avg_pool{nd}d")(x, **kw), randn(*SHAPES[nd]))


@pytest.mark.parametrize("kwargs", AVG[4:])
@pytest.mark.parametrize("nd", [2, 3])
def test_avg_pool_unbatched(backend: str, nd: int, kwargs: dict) -> None:
    kw = _for(nd, kwargs)
    check(lambda F, x: getattr(F, f"avg_pool{nd}d")(x, **kw), randn(*SHAPES[nd][1:]))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"norm_type": 3.0, "kernel_size": 3, "stride": 2},
        {"norm_type": 1.5, "kernel_size": 2, "stride": 1, "ceil_mode": True},
        {"norm_type": float("inf"), "kernel_size": 3, "stride": 2, "ceil_mode": True},
        {"norm_type": -float("inf"), "kernel_size": 2},
    ],
)
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lp_pool(backend: str, nd: int, kwargs: dict) -> None:
    # Positive inputs away from 0, where p-th roots of non-integer powers are defined.
    x = np.abs(randn(*SHAPES[nd])) + 0.5
    kw = _for(nd, kwargs)
    check(lambda F, x: getattr(F, f"lp_pool{nd}d")(x, **kw), x)
    check(lambda F, x: getattr(F, f"lp_pool{nd}d")(x, **kw), x[0])


def test_lp_pool_of_signed_input_and_of_all_zero_windows(backend: str) -> None:
    x = randn(2, 3, 7, 8)
    x[:, :, :3, :3] = 0  # zero sums: PyTorch's gradient there is 0
    check(lambda F, x: F.lp_pool2d(x, 2, 3, 2), x)
    check(lambda F, x: F.lp_pool2d(x, 3, 2), x)


def test_gradients_match_finite_differences(backend: str) -> None:
    x = randn(1, 2, 5, 4, 6)
    gradcheck(lambda F, x: F.max_pool3d(x, 2, 1, 1, ceil_mode=True), x)
    gradcheck(lambda F, x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False), x)
    gradcheck(lambda F, x: F.lp_pool3d(x, 2, 2), x)


FLOAT32 = {
    "max_pool3d": lambda F, x: F.max_pool3d(x, 3, 2, 1, return_indices=True),
    "avg_pool3d": lambda F, x: F.avg_pool3d(x, 2, ceil_mode=True, count_include_pad=False),
    "avg_pool1d": lambda F, x: F.avg_pool1d(x.flatten(2), 4, 3, 2),
    "lp_pool3d": lambda F, x: F.lp_pool3d(x, 2, 2),
}


@pytest.mark.parametrize("name", list(FLOAT32))
def test_float32_stays_float32(backend: str, name: str) -> None:
    x = randn(2, 3, 5, 6, 7).astype(np.float32)
    ours = FLOAT32[name](twF, tw.tensor(x))
    theirs = FLOAT32[name](torchF, torch.tensor(x))
    if not isinstance(ours, tuple):
        ours, theirs = (ours,), (theirs,)
    for a, e in zip(ours, theirs):
        assert_close(a, e, rtol=1e-5, atol=1e-6)


def test_nan_wins_the_max_as_in_pytorch(backend: str) -> None:
    x = randn(1, 2, 4, 4, 4)
    x[0, 1, 1, 2, 3] = np.nan
    check(lambda F, x: F.max_pool3d(x, 2, return_indices=True), x, grad=())
    check(lambda F, x: F.adaptive_max_pool3d(x, 3, return_indices=True), x, grad=())


def test_integer_max_pool(backend: str) -> None:
    x = np.random.default_rng(0).integers(-50, 50, (2, 3, 5, 6, 7))
    check(lambda F, x: F.max_pool3d(x, 2, 1, 1, return_indices=True), x)


def test_on_cunumeric() -> None:
    with entered("cunumeric"):
        x = randn(1, 2, 4, 5, 3)
        check(lambda F, x: F.max_pool3d(x, 2, 1, 1, return_indices=True), x)
        check(lambda F, x: F.avg_pool3d(x, 2, ceil_mode=True), x)


ERRORS = [
    (lambda F, x: F.max_pool3d(x, 2), (2, 3, 4), "4-D .*5-D"),
    (lambda F, x: F.max_pool1d(x, 4, padding=3), (2, 3, 8), "half the kernel"),
    (lambda F, x: F.avg_pool3d(x, 6), (1, 1, 4, 8, 8), "shorter than the window"),
    (lambda F, x: F.avg_pool2d(x, 2, divisor_override=0), (1, 1, 4, 4), "divisor_override"),
    (lambda F, x: F.max_pool2d(x, (2, 2, 2)), (1, 1, 4, 4), "kernel_size"),
]


@pytest.mark.parametrize(("fn", "shape", "match"), ERRORS)
def test_bad_arguments_raise_like_torch(fn, shape: tuple, match: str) -> None:
    with pytest.raises((RuntimeError, ValueError, TypeError)) as theirs:
        fn(torchF, torch.tensor(randn(*shape)))
    with pytest.raises(type(theirs.value), match=match):
        fn(twF, tw.tensor(randn(*shape)))
