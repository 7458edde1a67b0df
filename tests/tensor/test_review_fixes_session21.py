"""Fixes of the second reading of session 20's second wave (pow, its gradient, searchsorted
with NaN in the sequence, the numpy backend's cat of channels_last tensors, eye's dtype
check), each compared with torch 2.13 on the same program, only the import changed."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

NAN, INF = math.nan, math.inf
DEVICES = [*FAST, pytest.param("cunumeric", marks=pytest.mark.cunumeric)]


def _values(r: Any) -> Any:
    """A tensor's dtype name, shape and values as complex128 (None for no tensor)."""
    if r is None:
        return None
    return str(r.dtype).split(".")[-1], tuple(r.shape), np.asarray(r.detach().tolist(), complex)


def _outcome(fn: Callable[[Any], Any], m: Any) -> Any:
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__
    return tuple(_values(x) for x in r) if isinstance(r, tuple) else _values(r)


def _assert_same(got: Any, want: Any) -> None:
    """Equal outcomes: the same exception, or per tensor the same dtype, shape, NaNs and
    values (to rounding; the sign of a zero is not compared)."""
    if isinstance(want, str) or want is None:
        assert got == want
        return
    if isinstance(want, tuple) and not isinstance(want[0], str):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    assert not isinstance(got, str), got
    assert got[:2] == want[:2]
    np.testing.assert_array_equal(np.isnan(got[2]), np.isnan(want[2]))
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6, atol=1e-30, equal_nan=True)


def _same(fn: Callable[[Any], Any], device: str) -> None:
    want = _outcome(fn, torch)
    with entered(device):
        _assert_same(_outcome(fn, tw), want)


# -- pow ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "program",
    [
        lambda m: m.pow(1, m.tensor([NAN, 2.0, -INF])),
        lambda m: m.pow(1.0, m.tensor([complex(NAN, 0), complex(0, NAN), 1j])),
        lambda m: m.pow(1 + 0j, m.tensor([NAN, 3.0])),
        lambda m: m.pow(1, m.tensor([-1, 0, 5])),
        lambda m: m.pow(2, m.tensor([complex(NAN, 0), 1j])),
        lambda m: m.tensor([4.0, -4.0, 0.25]) ** (0.5 + 0j),
        lambda m: m.tensor([4.0, -4.0, 0.25], dtype=m.float64) ** (-0.5 + 0j),
        lambda m: m.float_power(m.tensor([4.0, -9.0]), 0.5 + 0j),
        lambda m: m.tensor([4 + 0j, -4, 0]).pow(-0.5 + 0j),
    ],
    ids=[
        "one_base_real",
        "one_base_complex",
        "complex_one_base",
        "one_base_int",
        "two_base_nan",
        "half",
        "minus_half",
        "float_power_half",
        "complex_minus_half",
    ],
)
def test_pow_number_corners(spec: str, program: Callable) -> None:
    _same(program, spec)


def test_float_power_of_one_is_one(spec: str) -> None:
    _same(lambda m: m.float_power(1, m.tensor([complex(NAN, 0), 2j])), spec)


def test_one_to_a_power_has_a_zero_exponent_gradient(spec: str) -> None:
    def grad(m: Any) -> Any:
        e = m.tensor([complex(NAN, 0), 1j, 2], requires_grad=True)
        m.pow(1, e).real.sum().backward()
        return e.grad

    _same(grad, spec)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("exponent", [0, 1, 2, 0.5, -1])
def test_number_power_gradients_at_zero(spec: str, dtype: str, exponent: float) -> None:
    """First and second derivatives of x ** p, x = 0 among others: PyTorch's PowBackward0
    takes a ** (p - 1) with a number p - 1 (0 ** 0 is 1 there), zeros for p = 0."""

    def grads(m: Any) -> Any:
        d = getattr(m, dtype)
        x = m.tensor([0, 1.5, -2], dtype=d, requires_grad=True)
        c = m.tensor([1 + 2j, 1, 3] if d.is_complex else [2.0, 1, 3], dtype=d)
        y = x**exponent * c
        (g,) = m.autograd.grad((y.real if d.is_complex else y).sum(), x, create_graph=True)
        try:
            (gg,) = m.autograd.grad((g.real if d.is_complex else g).sum(), x)
        except RuntimeError:  # (p = 0: PyTorch's zeros need no grad)
            gg = None
        return g, gg

    _same(grads, spec)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("exponent", [-1, -2, -0.5])
def test_complex_negative_powers_of_non_finite_numbers(device: str, exponent: float) -> None:
    bases = [
        complex(INF, 0),
        complex(0, INF),
        complex(-INF, 0),
        complex(INF, INF),
        complex(INF, NAN),
        complex(NAN, INF),
        complex(NAN, 0),
        complex(INF, 1),
        complex(2, -1),
    ]
    _same(lambda m: m.tensor(bases) ** exponent, device)


# -- searchsorted with NaN in the sequence ------------------------------------------------------


def _searchsorted_cases(seed: int, count: int) -> list[tuple]:
    """Sorted sequences (1-d or batched) ending in NaNs, keys with NaN, inf and ties."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        n, m, batched = int(rng.integers(1, 9)), int(rng.integers(0, 6)), i % 3 == 0
        seq = np.sort(rng.integers(-3, 4, size=(2, n) if batched else (n,)).astype(float), -1)
        seq[..., seq.shape[-1] - int(rng.integers(1, min(n, 3) + 1)) :] = NAN
        keys = rng.integers(-4, 5, size=(2, m) if batched else (m,)).astype(float)
        keys[rng.random(keys.shape) < 0.2] = NAN
        keys[rng.random(keys.shape) < 0.1] = INF
        sorter = np.stack([rng.permutation(n) for _ in range(2)]) if batched else rng.permutation(n)
        cases.append((seq, keys, sorter, i))
    return cases


@pytest.mark.parametrize("seq, keys, sorter, i", _searchsorted_cases(0, 12))
def test_searchsorted_past_nan_like_torch(
    spec: str, seq: Any, keys: Any, sorter: Any, i: int
) -> None:
    dtype = ["float64", "float32", "float16"][i % 3]
    options = [{}, {"right": True}, {"side": "right"}, {"side": "left", "out_int32": True}][i % 4]

    def program(m: Any) -> Any:
        d = getattr(m, dtype)
        s, k = m.tensor(seq, dtype=d), m.tensor(keys, dtype=d)
        plain = m.searchsorted(s, k, **options)
        # the same sequence stored out of order, read through sorter= (argsort of a stored)
        order = np.argsort(sorter, -1)
        stored = m.tensor(np.take_along_axis(seq, order, -1), dtype=d)
        return plain, m.searchsorted(stored, k, sorter=m.tensor(sorter), **options)

    _same(program, spec)


@pytest.mark.cunumeric
def test_searchsorted_past_nan_on_cunumeric() -> None:
    _same(
        lambda m: m.searchsorted(
            m.tensor([1.0, 2.0, NAN]), m.tensor([2.5, INF, 2.0, NAN]), right=True
        ),
        "cunumeric",
    )


def test_isin_with_nan_test_elements(spec: str) -> None:
    _same(lambda m: m.isin(m.tensor([1.0, 2.0, NAN]), m.tensor([1.0, NAN, NAN])), spec)


def test_array_api_isin_with_nan_test_elements(spec: str) -> None:
    import tensorweaver.array_api as xp

    x1, x2 = [1.0, 2.0, NAN], [1.0, NAN, NAN, 2.0]
    with entered(spec):
        got = xp.isin(xp.asarray(x1), xp.asarray(x2))
    np.testing.assert_array_equal(np.asarray(got), np.isin(x1, x2))


# -- numpy cat of channels_last, eye's dtype check ------------------------------------------------


def _layouts(m: Any) -> list:
    x = m.arange(120.0).reshape(2, 3, 4, 5)
    cl = x.contiguous(memory_format=m.channels_last)
    y = m.arange(240.0).reshape(2, 3, 2, 4, 5)
    cl3 = y.contiguous(memory_format=m.channels_last_3d)
    pairs = [
        (cl, cl),
        (cl, x),
        (x, cl),
        (cl3, cl3),
        (cl3, y),
        (cl.permute(0, 1, 3, 2), cl.permute(0, 1, 3, 2)),  # neither layout
        (cl[:, :1], cl[:, :1]),  # one channel: ambiguous, contiguous
        (m.arange(10.0).reshape(2, 1, 1, 5), m.arange(10.0).reshape(2, 1, 1, 5)),
    ]
    out = []
    for a, b in pairs:
        for d in range(a.ndim):
            r = m.cat([a, b], d)
            same = r.tolist() == m.cat([a.contiguous(), b.contiguous()], d).tolist()
            out.append((d, tuple(r.stride()), same))
    return out


def test_numpy_cat_keeps_torchs_layout() -> None:
    want = _layouts(torch)
    with entered("numpy"):
        assert _layouts(tw) == want


def test_eye_of_a_dtype_the_device_lacks_names_it() -> None:
    with entered("numpy"), pytest.raises(TypeError, match="has no bfloat16"):
        tw.eye(2, 3, dtype=tw.bfloat16)
