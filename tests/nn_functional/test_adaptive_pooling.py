"""Adaptive max and average pooling in 1, 2 and 3 dimensions against
torch.nn.functional: outputs, indices and gradients in float64 (float32 to its precision),
batched and unbatched, odd sizes, ``None`` sizes; errors."""

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

OUTPUT_SIZES = {1: [4, 1, 11], 2: [3, (2, 5), (None, 4), (7, 6)], 3: [2, (3, None, 4), 1]}
CASES = [(nd, size) for nd, sizes in OUTPUT_SIZES.items() for size in sizes]


@pytest.mark.parametrize(("nd", "size"), CASES)
def test_adaptive_avg_pool(backend: str, nd: int, size) -> None:
    pool = f"adaptive_avg_pool{nd}d"
    check(lambda F, x: getattr(F, pool)(x, size), randn(*SHAPES[nd]))
    check(lambda F, x: getattr(F, pool)(x, size), randn(*SHAPES[nd][1:]))


@pytest.mark.parametrize(("nd", "size"), CASES)
def test_adaptive_max_pool(backend: str, nd: int, size) -> None:
    pool = f"adaptive_max_pool{nd}d"
    check(lambda F, x: getattr(F, pool)(x, size, True), randn(*SHAPES[nd]))
    check(lambda F, x: getattr(F, pool)(x, size, True), randn(*SHAPES[nd][1:]))
    # Ties: the gradient goes to the first maximum, in row-major order.
    check(lambda F, x: getattr(F, pool)(x, size), np.round(randn(*SHAPES[nd])))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_max_pool_with_indices(backend: str, nd: int) -> None:
    fn = f"adaptive_max_pool{nd}d_with_indices"
    check(lambda F, x: getattr(F, fn)(x, 3), randn(*SHAPES[nd]))


def test_gradients_match_finite_differences(backend: str) -> None:
    x = randn(1, 2, 5, 4, 6)
    gradcheck(lambda F, x: F.adaptive_max_pool3d(x, (2, 3, 4)), x)
    gradcheck(lambda F, x: F.adaptive_avg_pool3d(x, (3, 2, 4)), x)


@pytest.mark.parametrize("name", ["adaptive_max_pool3d", "adaptive_avg_pool3d"])
def test_float32_stays_float32(backend: str, name: str) -> None:
    x = randn(2, 3, 5, 6, 7).astype(np.float32)
    ours = getattr(twF, name)(tw.tensor(x), (2, 3, 4))
    assert ours.dtype is tw.float32
    assert_close(ours, getattr(torchF, name)(torch.tensor(x), (2, 3, 4)), rtol=1e-5, atol=1e-6)


def test_on_cunumeric() -> None:
    with entered("cunumeric"):
        check(lambda F, x: F.adaptive_max_pool2d(x, (2, 3), True), randn(2, 5, 7))


ERRORS = [
    (lambda F, x: F.adaptive_max_pool3d(x, (2, 2)), (1, 1, 4, 4, 4), "output_size"),
    (lambda F, x: F.adaptive_avg_pool3d(x, 2), (4, 4), "4-D .*5-D"),
    (lambda F, x: F.adaptive_max_pool1d(x, 2), (4,), "2-D .*3-D"),
    (lambda F, x: F.adaptive_avg_pool2d(x, -1), (1, 4, 4), "positive"),
]


@pytest.mark.parametrize(("fn", "shape", "match"), ERRORS)
def test_bad_arguments_raise_like_torch(fn, shape: tuple, match: str) -> None:
    with pytest.raises((RuntimeError, ValueError, TypeError)) as theirs:
        fn(torchF, torch.tensor(randn(*shape)))
    with pytest.raises(type(theirs.value), match=match):
        fn(twF, tw.tensor(randn(*shape)))
