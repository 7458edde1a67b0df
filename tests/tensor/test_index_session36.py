"""Session 36: index_add / index_copy / index_fill / index_put_ checks and complex transposed
convolutions, as torch 2.13.

Before: ``index_add`` added a source whose slices did not match the input's (``(3, 4)``
along dim 0 with a ``(2, 3)`` source: broadcast into the rows, where PyTorch refuses) and
took a 2-d index; ``index_copy`` and ``index_fill`` returned a copy where indices point into
a dimension of size 0 (PyTorch: RuntimeError) and ``index_copy`` checked in another order
than PyTorch (other error classes); ``index_put_`` of one value through a uint8 mask of the
wrong size raised RuntimeError (PyTorch checks the mask's shape first: IndexError); a
complex ``conv_transpose`` was one node, where PyTorch's is three real transposed
convolutions (Gauss's trick, as session 35 made ``conv``)."""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import grid, same_each, walk

#: (self's shape, index, source's shape): a grid of fits and misfits (dims 0, -1 and 1)
SHAPES = [(), (3,), (3, 4), (0, 4)]
INDICES = [[], [0, 2], [[1, 0]], [-1], [5]]
SOURCES = [(), (2,), (1, 4), (2, 4), (3, 2), (2, 3)]


def _outcome(call: Callable, *args: Any, **options: Any) -> Any:
    """The sum of ``call(*args, **options)``, or the class of its exception."""
    try:
        return call(*args, **options).sum().item()
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__


def _index_writes(m: Any) -> dict:
    """What each of index_add (alpha 1 and 2), index_copy and index_fill gives over the
    grid, by its arguments."""
    out = {}
    for xs, i, ss, dim in itertools.product(SHAPES, INDICES, SOURCES, (0, -1, 1)):
        x, index, source = m.ones(xs), m.tensor(i, dtype=m.int64), m.ones(ss) * 2
        key = f"{xs} {i} {ss} {dim}"
        out[f"add {key}"] = _outcome(x.index_add, dim, index, source)
        out[f"add2 {key}"] = _outcome(x.index_add, dim, index, source, alpha=2)
        out[f"copy {key}"] = _outcome(x.index_copy, dim, index, source)
        if not ss:
            out[f"fill {key}"] = _outcome(x.index_fill, dim, index, 3.0)
    return out


def test_index_writes_check_as_torch() -> None:
    same_each({"grid": _index_writes}, "numpy")


def _uint8_mask_put(mask: list) -> Callable:
    def program(m: Any) -> Any:
        x = grid(m, 3, 4)
        x.index_put_((m.tensor(mask, dtype=m.uint8),), m.tensor(-1.0, dtype=m.float64))
        return x

    return program


@pytest.mark.filterwarnings("ignore:indexing with dtype uint8")
def test_uint8_mask_put_of_wrong_size(backend: str) -> None:
    masks = {"[1, 0]": [1, 0], "[[1, 0]] * 3": [[1, 0]] * 3, "[1, 0, 1]": [1, 0, 1]}
    same_each({k: _uint8_mask_put(v) for k, v in masks.items()}, backend)


def _complex_transposed(nd: int, bias: bool, **options: Any) -> Callable:
    def program(m: Any) -> Any:
        rng = np.random.default_rng(nd)

        def values(*shape: int) -> Any:
            return m.tensor(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))

        x = values(2, 4, *(3,) * nd).requires_grad_()
        w = values(4, 3, *(2,) * nd).requires_grad_()
        b = values(3 * options.get("groups", 1)).requires_grad_() if bias else None
        y = getattr(m.nn.functional, f"conv_transpose{nd}d")(x, w, b, **options)
        (y * y.conj()).real.sum().backward()
        return y, walk(y.grad_fn, 2), x.grad, w.grad, None if b is None else b.grad

    return program


def test_complex_conv_transpose_as_torch(backend: str) -> None:
    programs = {
        "1d bias, strided": _complex_transposed(1, True, stride=2, padding=1, output_padding=1),
        "2d grouped": _complex_transposed(2, True, groups=2),
    }
    same_each(programs, backend, decimals=8)


def _fill_negative_detached_value(m: Any) -> Any:
    """index_fill with a negative index refuses only the value's gradient: a value that
    needs none, or an index of positions, computes."""
    x = grid(m, 3, 4).requires_grad_()
    value = m.tensor(3.0, dtype=m.float64, requires_grad=True)
    x.index_fill(1, m.tensor([1, -1]), value.detach()).sum().backward()
    y = x.index_fill(1, m.tensor([1, 3]), value)
    y.sum().backward()
    return x.grad, value.grad, y


def test_index_fill_negative_detached_value(backend: str) -> None:
    same_each({"index_fill": _fill_negative_detached_value}, backend, decimals=None)


def _index_add_scaled_into_view(m: Any) -> Any:
    """index_add_ with alpha through a view: PyTorch's node takes the source itself (alpha
    scales inside its kernel); before, tw's took the scaled copy (a MulBackward0 edge)."""
    a, s = grid(m, 4, 4).requires_grad_(), grid(m, 3, 2).requires_grad_()
    b = a * 1
    b[:, 1:3].index_add_(0, m.tensor([0, 3, 0]), s, alpha=-2)
    (b * grid(m, 4, 4)).sum().backward()
    y = a.index_add(1, m.tensor([2, 0]), s.t()[:, :2].t().t(), alpha=3)
    return b, a.grad, s.grad, walk(b.grad_fn, 2), walk(y.grad_fn, 1)


def test_index_add_scaled_node(backend: str) -> None:
    same_each({"index_add_ alpha": _index_add_scaled_into_view}, backend)


def _index_add_source_double_backward(m: Any) -> Any:
    x, s = grid(m, 3, 4).requires_grad_(), grid(m, 2, 4).requires_grad_()
    y = x.index_add(0, m.tensor([0, 2]), s, alpha=3)
    (g,) = m.autograd.grad((y * y).sum(), s, create_graph=True)
    return g, walk(g.grad_fn, 3)


@pytest.mark.xfail(
    strict=True,
    reason="older: index_add's create_graph gradient of source is MulBackward0 over "
    "GatherBackward0 (the core's scatter-add's rule through the recorded alpha product), "
    "PyTorch's MulBackward1 (alpha as a Scalar) over ExpandBackward0 over "
    "IndexSelectBackward0. Cause: ops/index.py index_add scales source before a "
    "scatter_add (autograd/gradients.py's scatter rule gathers). Fix: a rule for "
    "IndexAddBackward0's source in autograd/gradients.py: g.index_select(dim, index) "
    "(expanded to source's shape), times alpha as a Scalar",
)
def test_index_add_source_double_backward_node() -> None:
    same_each({"index_add source create_graph": _index_add_source_double_backward}, "numpy")


def _int_index_add_float_alpha(m: Any) -> dict:
    """index_add on integer tensors with a float alpha: PyTorch casts alpha to self's dtype
    (truncating) before it scales the source (reader r3)."""

    def one(dtype: Any, alpha: float, inplace: bool = False) -> Any:
        x, s = grid(m, 3, 2, dtype=dtype), grid(m, 1, 2, dtype=dtype)
        call = x.index_add_ if inplace else x.index_add
        return call(0, m.tensor([1]), s, alpha=alpha)

    return {
        "int64 2.5": one(m.int64, 2.5),
        "int64 -1.5 in place": one(m.int64, -1.5, inplace=True),
        "uint8 1.9": one(m.uint8, 1.9),
        "0-d int64 2.7": m.tensor(3).index_add(0, m.tensor([0]), m.tensor(3), alpha=2.7),
    }


def test_int_index_add_float_alpha(backend: str) -> None:
    """Before: the source was scaled by the float alpha and the product rounded (int64
    [1, 2] * 2.5 -> [2, 5], PyTorch [2, 4]): silent."""
    same_each({"index_add": _int_index_add_float_alpha}, backend, decimals=None)


def _fill_negative_value_grad(shape: tuple, dim: int, index: Any) -> Callable:
    def program(m: Any) -> Any:
        x = grid(m, *shape) if shape else m.tensor(1.0, dtype=m.float64)
        value = m.tensor(5.0, dtype=m.float64, requires_grad=True)
        x.index_fill(dim, m.tensor(index), value).sum().backward()
        return value.grad

    return program


def test_index_fill_negative_value_grad_error_class(backend: str) -> None:
    """PyTorch's value gradient index_selects the raw index: RuntimeError only from its dim-1
    kernel of a self with 2+ dims, IndexError elsewhere (reader r3)."""
    cases = [
        ((), 0, [-1]),
        ((3,), 0, [-1]),
        ((3, 2), 0, [0, -2]),
        ((3, 2), 1, -1),
        ((2, 3, 2), 1, [-1]),
        ((2, 3, 2), 2, [-1]),
        ((3, 2), -1, [-1]),
    ]
    programs = {f"{s} {d} {i}": _fill_negative_value_grad(s, d, i) for s, d, i in cases}
    same_each(programs, backend)
