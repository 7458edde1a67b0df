"""Small fixes of the twenty-second session (third wave), each compared with torch 2.13 run
on the same snippet: NumPy ufuncs of tensors that require grad or are bfloat16,
``Tensor.output_nr``, the node of a split into one piece, a Function's gradient of the
wrong shape, and in-place writes whose source partly overlaps the written memory."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _outcome(fn: Callable[[Any], Any], m: Any) -> Any:
    """``fn(m)`` comparable across torch and tw: tensors as dtype name and values, an
    exception as its class."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(m)
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__
    if isinstance(r, (tuple, list)):
        return [_plain(x, m) for x in r]
    return _plain(r, m)


def _plain(r: Any, m: Any) -> Any:
    if isinstance(r, m.Tensor):
        return str(r.dtype).split(".")[-1], r.detach().double().tolist()
    return r


def _same(fn: Callable[[Any], Any], spec: str = "numpy") -> None:
    want = _outcome(fn, torch)
    with entered(spec):
        assert _outcome(fn, tw) == want


# -- NumPy ufuncs (tensor.py __array_wrap__) ---------------------------------------------------


@pytest.mark.parametrize(
    "ufunc",
    [
        lambda x: np.exp(x),
        lambda x: np.add(x.detach(), x),
        lambda x: np.multiply(x, 2.0),
        lambda x: np.exp(x.detach()),
        lambda x: np.add(x.detach(), 1.0),
        lambda x: np.greater(x.detach(), 0.0),
    ],
    ids=["exp", "add_second", "mul", "exp_detached", "add_detached", "greater_detached"],
)
def test_numpy_ufunc_refuses_a_tensor_requiring_grad(ufunc: Callable) -> None:
    _same(lambda m: ufunc(m.tensor([0.5, -1.0], dtype=m.float64, requires_grad=True)))


def test_numpy_ufunc_of_bfloat16_raises_type_error() -> None:
    _same(lambda m: np.exp(m.ones(2, dtype=m.bfloat16)), "torch:cpu")
    _same(lambda m: np.exp(m.ones(2, dtype=m.bfloat16).float()), "torch:cpu")


# -- output_nr (tensor.py) ------------------------------------------------------------------


def _pair(m: Any) -> Any:
    class Pair(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, y: Any) -> Any:
            return x * 2, y + x

        @staticmethod
        def backward(ctx: Any, ga: Any, gb: Any) -> Any:
            return 2 * ga + gb, gb

    return Pair


def test_output_nr() -> None:
    def program(m: Any) -> Any:
        x = m.ones(3, 4, dtype=m.float64, requires_grad=True)
        a, b = _pair(m).apply(x, x * 2)
        return [
            x.output_nr,
            (x * 3).output_nr,
            [p.output_nr for p in x.unbind(1)],
            [p.output_nr for p in x.split([1, 2])],
            [p.output_nr for p in x.chunk(1)],
            [a.output_nr, b.output_nr],
        ]

    _same(program)


# -- one piece of a split (ops/movement.py _cut) ------------------------------------------------


def test_single_piece_split_is_a_view_named_as_torch() -> None:
    def program(m: Any) -> Any:
        x = m.ones(2, 3, dtype=m.float64, requires_grad=True)
        pieces = [x.chunk(1)[0], x.split(5)[0], x.split([3], 1)[0], m.split(x, [2])[0]]
        names = [p.grad_fn.name() for p in pieces]
        (pieces[0] * m.arange(6.0, dtype=m.float64).view(2, 3)).sum().backward()
        return [names, [p is x for p in pieces], x.grad]

    _same(program)


def test_single_piece_split_shares_memory() -> None:
    def program(m: Any) -> Any:
        x = m.zeros(2, 3, dtype=m.float64)
        piece = x.chunk(1, 1)[0]
        piece.add_(1)
        x.mul_(3)
        return [x, piece]

    _same(program)


# -- a Function's gradient of the wrong shape (autograd/function.py) ----------------------------


def _returning(m: Any, grads: Callable) -> Any:
    class F(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, k: Any, x: Any, y: Any) -> Any:
            return x * k + y

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return (None, *grads(g))

    return F


@pytest.mark.parametrize(
    "grads",
    [
        lambda g: (g, g[:1]),
        lambda g: (g.sum(), g),
        lambda g: (g.expand(3, 2), g),
        lambda g: (g.view(1, 2), g),
        lambda g: (g.view(2, 1), g),
    ],
    ids=["short", "scalar", "summed", "leading_one", "transposed"],
)
def test_function_gradient_shape_checked(grads: Callable) -> None:
    def program(m: Any) -> Any:
        x = m.ones(2, dtype=m.float64, requires_grad=True)
        y = m.ones(2, dtype=m.float64, requires_grad=True)
        _returning(m, grads).apply(3.0, x, y).sum().backward()
        return [x.grad, y.grad]

    _same(program)


def test_function_gradient_error_names_function_and_index() -> None:
    with pytest.raises(RuntimeError, match=r"FBackward returned an invalid gradient at index 1"):
        x = tw.ones(2, requires_grad=True)
        _returning(tw, lambda g: (g, g[:1])).apply(3.0, x, x).sum().backward()


# -- partly overlapping in-place writes (ops/index.py setitem, ops/methods.py copy_/add_) -------

_WRITES = {
    "setitem_shifted": lambda m, x: x.__setitem__(slice(1, None), x[:-1]),
    "setitem_same": lambda m, x: x.__setitem__(slice(None), x),
    "setitem_apart": lambda m, x: x.__setitem__(slice(0, 3), x[3:]),
    "setitem_every_other": lambda m, x: x.__setitem__(slice(1, None, 2), x[::2]),
    "setitem_0d": lambda m, x: x.__setitem__(slice(0, 2), x[1]),
    "setitem_index_put": lambda m, x: x.__setitem__(m.tensor([1, 2]), x[4:]),
    "setitem_mask_values": lambda m, x: x.__setitem__(x > 3, x[:2]),
    "setitem_mask_fill": lambda m, x: x.__setitem__(x > 2, x[0]),
    "setitem_rows_broadcast": lambda m, x: x.view(2, 3).__setitem__(slice(None), x[:3]),
    "setitem_column": lambda m, x: x.view(2, 3).__setitem__(0, x.view(2, 3)[:, 1]),
    "copy_shifted": lambda m, x: x[1:].copy_(x[:-1]),
    "copy_same": lambda m, x: x.copy_(x),
    "copy_0d": lambda m, x: x[0:2].copy_(x[1]),
    "copy_broadcast": lambda m, x: x.view(2, 3).copy_(x[:3]),
    "copy_columns": lambda m, x: x.view(2, 3)[:, :2].copy_(x.view(2, 3)[:, 1:]),
    "add_shifted": lambda m, x: x[1:].add_(x[:-1]),
    "add_same": lambda m, x: x.add_(x),
    "add_0d": lambda m, x: x.add_(x[1]),
    "add_number": lambda m, x: x.add_(1.0),
    "iadd_shifted": lambda m, x: x[1:].__iadd__(x[:-1]),
    "sub_alpha_shifted": lambda m, x: x[1:].sub_(x[:-1], alpha=2),
    "add_apart": lambda m, x: x[:3].add_(x[3:]),
}


@pytest.mark.parametrize("name", list(_WRITES))
def test_write_from_own_memory(spec: str, name: str) -> None:
    def program(m: Any) -> Any:
        x = m.arange(6.0, dtype=m.float64)
        _WRITES[name](m, x)
        return x

    _same(program, spec)


def test_write_after_copy_from_another_tensor(spec: str) -> None:
    """A copy_ may leave two tensors over one array: they are no views of each other, so a
    write of one from the other is no overlap."""

    def program(m: Any) -> Any:
        z = m.arange(6.0, dtype=m.float64)
        x = m.zeros(6, dtype=m.float64)
        x.copy_(z)
        x[1:].copy_(z[:-1])
        x[1:] = z[:-1]
        x[1:].add_(z[:-1])
        return [x, z]

    _same(program, spec)


def test_write_through_a_view_of_a_view(spec: str) -> None:
    cases = [
        lambda v, x: v[1:].copy_(v[:-1]),
        lambda v, x: v.__setitem__(slice(1, None), x[:-2]),
        lambda v, x: v.__setitem__(slice(0, 2), x[3:5]),
    ]
    for case in cases:

        def program(m: Any, case: Callable = case) -> Any:
            x = m.arange(6.0, dtype=m.float64)
            case(x[1:], x)
            return x

        _same(program, spec)


def test_write_from_a_detached_overlapping_view(spec: str) -> None:
    def program(m: Any) -> Any:
        x = m.arange(6.0, dtype=m.float64)
        x[1:].add_(x[:-1].detach())
        return x

    _same(program, spec)
