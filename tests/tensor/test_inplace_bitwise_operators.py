"""``a &= b``, ``a |= b`` and ``a ^= b`` work in place as PyTorch's: they rebound ``a`` to a
new tensor, so a view's base never saw the write, another name for ``a`` kept the old
values, and int8 &= uint8 became int16."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _program(lib) -> list:
    a = lib.tensor([1, 2, 3], dtype=lib.int8)
    v = a[:2]
    v &= lib.tensor([1, 0], dtype=lib.int8)
    b = lib.tensor([True, False])
    c = b
    c |= lib.tensor([False, True])
    d = b
    d ^= lib.tensor([True, True])
    x = lib.tensor([5], dtype=lib.int8)
    x &= lib.tensor([3], dtype=lib.uint8)
    return [a.tolist(), b.tolist(), x.tolist(), str(x.dtype).split(".")[-1]]


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_inplace_bitwise_operators_like_torch(spec: str) -> None:
    with entered(spec):
        ours = _program(tw)
    assert ours == _program(torch)


def test_a_bool_tensor_cannot_hold_an_int_result() -> None:
    e = tw.tensor([True])
    with pytest.raises(RuntimeError):
        e &= tw.tensor([3])
