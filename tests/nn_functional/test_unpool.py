"""``max_unpool1d/2d/3d`` and ``fractional_max_pool2d/3d`` against torch.nn.functional in
float64 (float32 to its precision): outputs, indices and gradients, batched and unbatched;
fractional pooling with PyTorch's own ``_random_samples``, and seeded without them."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from functional_reference import assert_close, check, gradcheck, randn
from tw_backends import entered

SHAPES = {1: (2, 3, 9), 2: (2, 3, 9, 7), 3: (2, 2, 6, 7, 9)}
POOLS = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3, 3), "stride": (2, 1, 2), "padding": (1, 1, 0)},
]


def _pooled(nd: int, kwargs: dict, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's max pooling output and indices of a random input."""
    out, indices = getattr(torchF, f"max_pool{nd}d")(
        torch.tensor(randn(*shape)), return_indices=True, **kwargs
    )
    return out.numpy(), indices.numpy()


def _default_size(pooled: tuple, nd: int, kw: dict) -> list[int]:
    """PyTorch's default unpooled size: (n - 1) * stride - 2 * padding + kernel."""

    def each(name: str, default: int) -> tuple:
        value = kw.get(name, default)
        return value if isinstance(value, tuple) else (value,) * nd

    kernel = each("kernel_size", 0)
    stride = each("stride", kernel[0]) if "stride" in kw else kernel
    return [
        (n - 1) * s - 2 * p + k for n, k, s, p in zip(pooled, kernel, stride, each("padding", 0))
    ]


def _for(nd: int, kwargs: dict) -> dict:
    return {k: v[-nd:] if isinstance(v, tuple) else v for k, v in kwargs.items()}


@pytest.mark.parametrize("kwargs", POOLS)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_max_unpool(backend: str, nd: int, kwargs: dict, batched: bool) -> None:
    kw = _for(nd, kwargs)
    shape = SHAPES[nd] if batched else SHAPES[nd][1:]
    values, indices = _pooled(nd, kw, shape)
    unpool = f"max_unpool{nd}d"
    size = list(shape[-nd:])
    if np.max(indices) < np.prod(_default_size(values.shape[-nd:], nd, kw)):
        check(lambda F, v, i: getattr(F, unpool)(v, i, **kw), values, indices)
    # The input's own size (one more than the default where the pooling dropped a border).
    check(lambda F, v, i: getattr(F, unpool)(v, i, output_size=size, **kw), values, indices)
    if batched:  # (N, C, *spatial) works too
        check(lambda F, v, i: getattr(F, unpool)(v, i, output_size=shape, **kw), values, indices)


def test_max_unpool_round_trip_and_float32(backend: str) -> None:
    x = randn(2, 3, 6, 8).astype(np.float32)
    values, indices = twF.max_pool2d(tw.tensor(x), 2, return_indices=True)
    ours = twF.max_unpool2d(values, indices, 2)
    assert ours.dtype is tw.float32
    theirs = torchF.max_unpool2d(*torchF.max_pool2d(torch.tensor(x), 2, return_indices=True), 2)
    assert_close(ours, theirs, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("output_size", "match"), [((9, 9), "out of range"), ((3, 4, 5), "sequence of 2")]
)
def test_max_unpool_bad_output_size_raises(backend: str, output_size: tuple, match: str) -> None:
    values, indices = _pooled(2, {"kernel_size": 2}, (1, 2, 6, 6))
    with pytest.raises(ValueError):
        torchF.max_unpool2d(torch.tensor(values), torch.tensor(indices), 2, output_size=output_size)
    with pytest.raises(ValueError, match=match):
        twF.max_unpool2d(tw.tensor(values), tw.tensor(indices), 2, output_size=output_size)


def test_max_unpool_bad_indices_raise(backend: str) -> None:
    values, indices = _pooled(2, {"kernel_size": 2}, (1, 2, 6, 6))
    with pytest.raises(RuntimeError, match="outside the output"):
        twF.max_unpool2d(tw.tensor(values), tw.tensor(indices + 100), 2)
    with pytest.raises(RuntimeError, match="int64 with the input's shape"):
        twF.max_unpool2d(tw.tensor(values), tw.tensor(indices[:, :1]), 2)


FRACTIONAL = [
    {"kernel_size": 2, "output_size": 4},
    {"kernel_size": 3, "output_size": (3, 4, 5)},
    {"kernel_size": (2, 3, 2), "output_ratio": (0.5, 0.6, 0.7)},
    {"kernel_size": 1, "output_size": (1, 5, 6)},
]


@pytest.mark.parametrize("kwargs", FRACTIONAL)
@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_fractional_max_pool_with_given_samples(
    backend: str, nd: int, kwargs: dict, batched: bool
) -> None:
    kw = _for(nd, kwargs)
    shape = SHAPES[nd] if batched else SHAPES[nd][1:]
    samples = np.random.default_rng(3).random((shape[0] if batched else 1, shape[-nd - 1], nd))
    pool = f"fractional_max_pool{nd}d"
    check(
        lambda F, x, u: getattr(F, pool)(x, return_indices=True, _random_samples=u, **kw),
        randn(*shape),
        samples,
        grad=(0,),
    )


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_float32_windows_as_pytorch(backend: str, nd: int) -> None:
    # The window starts are computed in the input's dtype: float32 rounds as PyTorch's.
    x = randn(*(2, 3, 31, 29, 37)[: nd + 2]).astype(np.float32)
    u = np.random.default_rng(4).random((2, 3, nd)).astype(np.float32)
    size = (7, 11, 13)[-nd:]
    pool = f"fractional_max_pool{nd}d"
    ours = getattr(twF, pool)(
        tw.tensor(x), 2, size, return_indices=True, _random_samples=tw.tensor(u)
    )
    theirs = getattr(torchF, pool)(
        torch.tensor(x), 2, size, return_indices=True, _random_samples=torch.tensor(u)
    )
    assert ours[0].dtype is tw.float32
    for a, e in zip(ours, theirs):
        assert_close(a, e, rtol=0, atol=0)


def test_fractional_max_pool_draws_seeded_samples(backend: str) -> None:
    x = tw.tensor(randn(2, 3, 9, 9))
    results = []
    for seed in (7, 7, 8):
        tw.manual_seed(seed)
        results.append(twF.fractional_max_pool2d(x, 2, 4, return_indices=True))
    (out, indices), (_, again), (_, other) = results
    np.testing.assert_array_equal(indices.numpy(), again.numpy())
    assert not np.array_equal(indices.numpy(), other.numpy())
    # Each output is the input at its index.
    picked = np.take_along_axis(x.numpy().reshape(2, 3, 81), indices.numpy().reshape(2, 3, 16), 2)
    np.testing.assert_array_equal(out.numpy().reshape(2, 3, 16), picked)


def test_fractional_gradient_matches_finite_differences(backend: str) -> None:
    u = np.random.default_rng(5).random((1, 2, 3))
    gradcheck(
        lambda F, x: F.fractional_max_pool3d(x, 2, (2, 3, 3), _random_samples=tw.tensor(u)),
        randn(1, 2, 5, 6, 7),
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kernel_size": 2}, "either an output_size or an output_ratio"),
        ({"kernel_size": 4, "output_size": 7}, "do not fit"),
        ({"kernel_size": 2, "output_ratio": (1.5, 0.5)}, "output_ratio"),
    ],
)
def test_fractional_bad_arguments_raise(kwargs: dict, match: str) -> None:
    x = randn(1, 2, 8, 8)
    with pytest.raises((RuntimeError, ValueError)) as theirs:
        torchF.fractional_max_pool2d(torch.tensor(x), **kwargs)
    with pytest.raises(type(theirs.value), match=match):
        twF.fractional_max_pool2d(tw.tensor(x), **kwargs)


def test_on_cunumeric() -> None:
    with entered("cunumeric"):
        values, indices = _pooled(2, {"kernel_size": 2}, (1, 2, 4, 6))
        check(lambda F, v, i: F.max_unpool2d(v, i, 2), values, indices)
        u = np.random.default_rng(3).random((1, 2, 2))
        check(
            lambda F, x, u: F.fractional_max_pool2d(x, 2, 3, _random_samples=u),
            randn(1, 2, 6, 7),
            u,
            grad=(0,),
        )
