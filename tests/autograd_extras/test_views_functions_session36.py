"""Session 36, fixer F6: views whose shape (or whose base's shape) changes in place under
no_grad get the grad_fn PyTorch regenerates for them; a custom Function's grad_fn is its ctx
(BackwardCFunction, one class per Function subclass). Compared with torch 2.13."""

from __future__ import annotations

import math
from typing import Any

import pytest
from snippet_outcomes import same_each, walk

SPECS = ["numpy", "torch:cpu"]

_CHANGES = {
    "t_": lambda a: a.t_(),
    "unsqueeze_": lambda a: a.unsqueeze_(0),
    "squeeze_": lambda a: a.squeeze_(),
    "transpose_": lambda a: a.transpose_(0, -1),
}


def _weights(m: Any, shape: tuple) -> Any:
    return m.arange(1.0, 1.0 + math.prod(shape), dtype=m.float64).reshape(shape)


@pytest.mark.parametrize("spec", SPECS)
def test_view_shape_changed_under_no_grad(spec: str) -> None:
    """A view (of a leaf made by reshape, of a plain leaf, of a non-leaf) changes shape in
    place under no_grad, a no-op change too (t_ of a row): its grad_fn is regenerated over its
    root base, AsStridedBackward0, with no edge where that root requires no grad."""
    roots = {
        "reshaped-leaf": lambda m: _weights(m, (2, 3)).requires_grad_(),
        "leaf": lambda m: m.ones(2, 3, dtype=m.float64, requires_grad=True),
        "non-leaf": lambda m: m.ones(2, 3, dtype=m.float64, requires_grad=True) * 2,
    }
    views = {"row": lambda x: x[0], "view": lambda x: x.view(3, 2)}

    def program(m: Any, root: str, view: str, change: str) -> Any:
        x = roots[root](m)
        a = views[view](x)
        with m.no_grad():
            _CHANGES[change](a)
        shown = (walk(a.grad_fn), a.requires_grad, a.is_leaf)
        (a * _weights(m, (3, 3))).sum().backward()
        return shown, x.grad if x.is_leaf else None

    same_each(
        {
            f"{r}-{v}-{c}": lambda m, r=r, v=v, c=c: program(m, r, v, c)
            for r in roots
            for v in views
            for c in ("t_", "squeeze_")
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_base_shape_changed_under_no_grad_then_view_used(spec: str) -> None:
    """A non-leaf with a view changes shape in place under no_grad, then the view is used:
    PyTorch's regenerated view node gives the base a gradient of its new shape, summed into
    the shape its producer made it in (unsqueeze_), or refused where it cannot be (t_ of a
    row, squeeze_); a square t_ hands the base's node the transposed gradient."""

    def program(m: Any, shape: tuple, change: str, use: tuple) -> Any:
        x = _weights(m, shape).requires_grad_()
        h = x * 1.5
        v = h[0]
        with m.no_grad():
            _CHANGES[change](h)
        (v * _weights(m, use)).sum().backward()
        return x.grad

    same_each(
        {
            f"{s}-{c}-{w}": lambda m, s=s, c=c, w=w: program(m, s, c, w)
            for s in ((1, 3), (2, 2))
            for c in _CHANGES
            for w in ((1,), (3, 3))
        },
        spec,
    )


def _function(m: Any) -> Any:
    class F(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.k = 2.0
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            return g1 * ctx.k + g2 * getattr(ctx, "_extra", 0.0)

    return F


@pytest.mark.parametrize("spec", SPECS)
def test_function_grad_fn_class_and_attributes(spec: str) -> None:
    """Each Function subclass has its own grad_fn class (``_forward_cls`` its Function), a
    BackwardCFunction; attributes set on the grad_fn, private ones too, are the ctx's."""

    def classes(m: Any) -> Any:
        from_module = m.autograd.function.BackwardCFunction
        x = m.ones(2, dtype=m.float64, requires_grad=True)
        f, g = _function(m), _function(m)
        a, b = f.apply(x)
        c = g.apply(x)[0]
        return (
            type(a.grad_fn).__name__,
            type(a.grad_fn) is type(b.grad_fn),
            type(a.grad_fn) is type(c.grad_fn),
            type(a.grad_fn)._forward_cls is f,
            isinstance(c.grad_fn, from_module),
        )

    def attributes(m: Any) -> Any:
        x = m.ones(2, dtype=m.float64, requires_grad=True)
        a, b = _function(m).apply(x)
        a.grad_fn.k = 5.0
        b.grad_fn._extra = 7.0
        (a + b).sum().backward()
        return x.grad, a.grad_fn.k, a.grad_fn._extra

    same_each({"classes": classes, "attributes": attributes}, spec)


@pytest.mark.xfail(
    strict=True,
    reason="open: after a non-leaf base's shape changed in place under no_grad, its view's "
    "regenerated AsStridedBackward0 shows one more node in next_functions than torch's "
    "(TBackward0/ViewBackward0 before MulBackward0): ops/inplace_shape.py "
    "_base_in_new_geometry gives the handed-over old tensor a node reading the base back "
    "into its old shape, and tensor.py _take_view_node labels the view's node over that "
    "old tensor. Gradients match torch. Fix: label the view's node over the changed base "
    "itself (its recorded inputs the base, not the old tensor) in _take_view_node",
)
@pytest.mark.parametrize("spec", SPECS)
def test_view_of_reshaped_base_next_functions(spec: str) -> None:
    def program(m: Any) -> Any:
        h = m.ones(2, 2, dtype=m.float64, requires_grad=True) * 1.5
        v = h[0]
        with m.no_grad():
            h.t_()
        return walk(v.grad_fn, 2)

    same_each({"t_": program}, spec)
