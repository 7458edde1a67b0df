"""The torch plugin's short routes give what the general call gives.

``slice`` takes three (one Python slice of axis 0, ``torch.narrow`` for a unit-step cut of
one later axis, a tuple of slices otherwise): each gives torch's own basic-indexing result,
a view with its values, shape, strides and offset, for every cut of small arrays, empty
ones and 0-d included. ``full`` of shape ``()`` is ``torch.scalar_tensor``: the same bits,
or the same error, as ``torch.full`` for every dtype and awkward values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tensorweaver.contract import dtypes as d  # noqa: E402
from tensorweaver_torch import plugin  # noqa: E402


@pytest.fixture(scope="module")
def cpu():
    record = next(r for r in plugin.tw_devices(probe=True) if r.kind == "cpu")
    return plugin.tw_create_backend(device=record)


def _cuts(n: int, steps: tuple) -> list:
    """Every (start, stop, step) the IR allows on an axis of size ``n``."""
    return [
        (start, stop, step)
        for start in range(n + 1)
        for stop in range(start, n + 1)
        for step in steps
    ]


def _check(cpu, a: torch.Tensor, cuts: tuple) -> None:
    starts, stops, steps = (tuple(c[i] for c in cuts) for i in range(3))
    got = cpu.slice(a, starts, stops, steps)
    want = a[tuple(slice(*c) for c in cuts)]  # torch's basic indexing: a view
    assert (got.shape, got.stride(), got.storage_offset()) == (
        want.shape,
        want.stride(),
        want.storage_offset(),
    ), cuts
    assert got.untyped_storage().data_ptr() == a.untyped_storage().data_ptr(), cuts
    np.testing.assert_array_equal(cpu.to_host(got), a.numpy()[tuple(slice(*c) for c in cuts)])


@pytest.mark.parametrize(
    ("shape", "steps"), [((5,), (1, 2, 3)), ((3, 4), (1, 2, 3)), ((3, 2, 4), (1, 2))]
)
def test_every_cut_is_torch_basic_indexing(cpu, shape: tuple, steps: tuple) -> None:
    a = cpu.from_host(np.arange(np.prod(shape), dtype=np.float64).reshape(shape), d.float64)
    for cuts in itertools.product(*(_cuts(n, steps) for n in shape)):
        _check(cpu, a, cuts)


def test_zero_d_empty_and_strided_inputs(cpu) -> None:
    _check(cpu, cpu.full((), 7, d.int64), ())
    empty = cpu.full((2, 0, 3), 1, d.float32)
    for cuts in [((0, 2, 1), (0, 0, 1), (1, 3, 1)), ((1, 1, 1), (0, 0, 1), (0, 3, 1))]:
        _check(cpu, empty, cuts)
    base = cpu.from_host(np.arange(60.0).reshape(3, 4, 5), d.float64)
    strided = cpu.slice(cpu.permute(base, (2, 0, 1)), (1, 0, 0), (5, 3, 4), (2, 1, 1))
    for cuts in [((0, 2, 1), (1, 3, 1), (0, 4, 1)), ((0, 2, 1), (0, 3, 1), (1, 3, 1))]:
        _check(cpu, strided, cuts)


VALUES = [0, -1, 2**63 - 1, -(2**63), 2**64, 2.7, -2.7, 1e40, math.nan, -math.inf, -0.0, 1e-50]
VALUES += [True, 255, -129, 65504.5, 1 + 2j, np.float32(1.5), np.int64(3), np.bool_(True)]


def _outcome(make, *args, **kwargs) -> tuple:
    try:
        r = make(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError, OverflowError) as exc:
        return type(exc).__name__
    return r.dtype, r.shape, r.reshape(1).view(torch.uint8).tolist()  # the bits


@pytest.mark.parametrize("dtype", sorted(d.ALL, key=lambda t: t.name), ids=lambda t: t.name)
def test_zero_d_full_is_torch_full(cpu, dtype) -> None:
    torch_dtype = getattr(torch, dtype.name)
    for value in VALUES:
        want = _outcome(torch.full, (), value, dtype=torch_dtype)
        assert _outcome(cpu.full, (), value, dtype) == want, value
