"""The shapes of new tensors come from a cache of ``tw.Size`` objects (tensor.py ``_SIZES``):
each tensor's ``shape`` must still be a ``tw.Size`` of Python ints equal to its array's
shape, whatever shapes came before, also once the cache has started over, and one tensor's
``Size`` must not carry anything to another's."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import tensorweaver as tw
import torch

tensor_module = sys.modules["tensorweaver.tensor"]  # tw.tensor is the creation function


def _check_shape(t: tw.Tensor, expected: tuple) -> None:
    assert type(t.shape) is tw.Size
    assert t.shape == expected
    assert all(type(n) is int for n in t.shape)
    assert t.size() == torch.Size(expected)


def test_shapes_of_results(backend: str) -> None:
    rng = np.random.default_rng(0)
    shapes = [(), (1,), (3,), (2, 3), (3, 2), (2, 1, 3), (0, 4), (4, 0, 2)]
    for shape in shapes:
        x = tw.tensor(rng.standard_normal(shape))
        _check_shape(x, shape)
        _check_shape(x.exp(), shape)
        _check_shape(x + x, shape)
        _check_shape(x.sum(), ())
        _check_shape(x.reshape(-1), (int(np.prod(shape)),))
        if len(shape) >= 2:
            _check_shape(x.transpose(0, 1), (shape[1], shape[0]) + shape[2:])


def test_cache_starts_over_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """More distinct shapes than the cache keeps: every tensor still gets its own shape, and
    the cache never holds more than its limit."""
    monkeypatch.setattr(tensor_module, "_SIZES_KEPT", 3)
    monkeypatch.setattr(tensor_module, "_SIZES", {})
    made = []
    for n in range(1, 12):
        made.append((tw.zeros(n, 2), (n, 2)))
        assert len(tensor_module._SIZES) <= 3
    for t, shape in made:
        _check_shape(t, shape)
        np.testing.assert_array_equal(t.numpy(), np.zeros(shape))


class _Native:
    """An array stand-in whose shape holds NumPy integers, as a third-party backend's may."""

    def __init__(self, shape: tuple) -> None:
        self.shape = shape


def test_shape_of_numpy_integers_is_python_ints(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shape of NumPy integers gives a ``Size`` of Python ints (as ``torch.Size`` holds),
    both when it fills the cache and when it finds a shape already there."""
    monkeypatch.setattr(tensor_module, "_SIZES", {})
    backend = tw.zeros(1).backend
    first = tw.Tensor(_Native((np.int64(5), np.int32(7))), backend, tw.float32)
    _check_shape(first, (5, 7))
    again = tw.Tensor(_Native((np.int64(5), np.int64(7))), backend, tw.float32)
    _check_shape(again, (5, 7))
    python_ints = tw.zeros(5, 7)
    _check_shape(python_ints, (5, 7))


def test_size_arithmetic_keeps_its_type(backend: str) -> None:
    x = tw.zeros(2, 3)
    assert type(x.shape + (4,)) is tw.Size
    assert x.shape + (4,) == (2, 3, 4)
    assert type((1,) + x.shape) is tw.Size
    assert type(x.shape * 2) is tw.Size
    assert x.shape.numel() == 6
    assert repr(x.shape) == "tensorweaver.Size([2, 3])"


def test_sizes_take_no_attributes_like_torch(backend: str) -> None:
    """Tensors of one shape share one cached ``Size``: an attribute set on it would reach them
    all, so it takes none, as ``torch.Size``."""
    for m in (tw, torch):
        x, y = m.zeros(2, 3), m.ones(2, 3)
        with pytest.raises(AttributeError):
            x.shape.note = "mine"
        assert not hasattr(y.shape, "note")
