"""Conjugate views and host memory as PyTorch 2.13's: the strides of views taken of a
``conj()`` view (its dimensions of size 1 too), and in-place writes into read-only NumPy
memory whose elements repeat. Each case runs one program on torch and on tensorweaver and
compares what it returns, or the class of the error it raises.

Fixed here (each failed before):
* a view of a conj view (``t()``, ``permute``, ``unsqueeze``, slicing) over a base with
  dimensions of size 1 reported the stride of a size-1 dimension as 1 or the array's
  (ops/views.py ``part_layout`` left those steps of the conj's array unmapped); PyTorch's
  is the base's;
* ``add_`` into a tensor over read-only NumPy memory that repeats elements
  (``np.broadcast_to``) gave the tensor an array of its own; PyTorch refuses it (tensor.py
  ``_store``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

_VIEWS = {
    "t": lambda x: x.transpose(0, -1),
    "perm": lambda x: x.permute(*reversed(range(x.dim()))),
    "unsq": lambda x: x.unsqueeze(0),
    "unsq_end": lambda x: x.unsqueeze(-1),
    "idx": lambda x: x[0],
    "sl": lambda x: x[..., ::2],
}
_SHAPES = [(1, 3), (3, 1), (2, 1, 3), (1, 2, 1)]


def _strides(m: Any, shape: tuple, before: str, after: str) -> list:
    values = np.arange(1, int(np.prod(shape)) + 1).reshape(shape) * (1 - 2j)
    z = m.tensor(values)
    z = z if before == "none" else _VIEWS[before](z)
    c = z.conj()
    out = _VIEWS[after](c)
    return [c.stride(), out.stride(), out.is_contiguous(), out.resolve_conj().tolist()]


@pytest.mark.parametrize("after", list(_VIEWS))
@pytest.mark.parametrize("before", ["none", "unsq"])
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_strides_of_views_of_a_conj_view_as_torch(
    backend: str, shape: tuple, before: str, after: str
) -> None:
    with tw.device(backend):
        assert _strides(tw, shape, before, after) == _strides(torch, shape, before, after)


def test_strides_of_a_view_of_a_conj_of_a_transposed_base(backend: str) -> None:
    with tw.device(backend):
        assert _strides(tw, (2, 1, 3), "t", "idx") == _strides(torch, (2, 1, 3), "t", "idx")


def _outcome(fn: Any, m: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch warns that the array is read-only)
        try:
            return fn(m)
        except RuntimeError as e:
            return type(e).__name__


_WRITES = {
    "add_": lambda p: p.add_(1),
    "mul_": lambda p: p.mul_(2),
    "copy_": lambda p: p.copy_(p * 0 + 1),
}


@pytest.mark.parametrize("case", list(_WRITES))
def test_writes_into_read_only_repeated_host_memory_as_torch(backend: str, case: str) -> None:
    def program(m: Any) -> Any:
        base = np.arange(3.0)
        p = m.from_numpy(np.broadcast_to(base, (2, 3)))
        _WRITES[case](p)
        return p.tolist()

    with tw.device(backend):
        assert _outcome(program, tw) == _outcome(program, torch)
