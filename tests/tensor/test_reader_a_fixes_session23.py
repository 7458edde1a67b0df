"""Neighbours of the defects the second reader (reader A) of session 23 recorded in
tests/ports/test_review_session23_reader_a.py, mended this session: a resized ``out=`` that
partly overlaps an input, ``stack``'s layouts at the last dim and into a resized ``out``,
``axis=`` for ``cat``/``stack``, ``fill_(None)``, a Function's gradients that are no tensors
or belong to inputs without grad, grad-mode managers' ``clone()`` and ``outer`` of a number.
Each case runs on torch 2.13 and on tensorweaver with only the module changed.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import same_each


def _grid(m: Any, *shape: int) -> Any:
    return m.arange(float(np.prod(shape)), dtype=m.float64).reshape(shape)


# -- a resized out= that partly overlaps an input (cumsum, cumprod) --------------------------


def _cumsum_into(src: Callable[[Any], Any], out: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 8)
        r = m.cumsum(src(x), 0, out=out(x))
        return r, x, r.stride()

    return program


RESIZED_OUT: dict[str, Callable[[Any], Any]] = {
    "smaller_out_over_the_input": _cumsum_into(lambda x: x[:2], lambda x: x[1:2]),
    "larger_out_over_the_input": _cumsum_into(lambda x: x[:2], lambda x: x[1:4]),
    "after_the_input": _cumsum_into(lambda x: x[:2], lambda x: x[2:6]),
    "same_start_larger": _cumsum_into(lambda x: x[:2], lambda x: x[0:4]),
    "same_elements_other_shape": _cumsum_into(lambda x: x[:4].view(2, 2), lambda x: x[0:4]),
    "reshaped_over_itself": _cumsum_into(lambda x: x[:4], lambda x: x[0:4].view(2, 2)),
    "shifted_2d": _cumsum_into(lambda x: x[:4].view(2, 2), lambda x: x[1:6]),
    "cumprod": lambda m: (lambda x: (m.cumprod(x[:2], 0, out=x[1:4]), x))(_grid(m, 8)),
}


# -- stack: layouts at the last dim and of a resized out; axis= for cat and stack ------------


def _channels_last(m: Any) -> Any:
    return _grid(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last)


def _channels_last_3d(m: Any) -> Any:
    return _grid(m, 2, 3, 2, 2, 2).contiguous(memory_format=m.channels_last_3d)


def _layout(y: Any) -> Any:
    return y.stride(), y.is_contiguous(), y


def _stack_out(make: Callable[[Any], Any], dim: int, **kw: Any) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        out = m.empty(0, dtype=m.float64)
        m.stack([make(m), make(m) + 1], dim, out=out, **kw)
        return _layout(out)

    return program


def _stacked(make: Callable[[Any], Any], dim: int) -> Callable[[Any], Any]:
    return lambda m: _layout(m.stack([make(m), make(m)], dim))


def _joined_unsqueezed(dim: int) -> Callable[[Any], Any]:
    """cat of channels-last tensors unsqueezed at the end (5-d: no format of torch's)."""
    return lambda m: _layout(m.cat([_channels_last(m).unsqueeze(4)] * 2, dim))


STACK: dict[str, Callable[[Any], Any]] = {
    **{
        f"last_{k}_{d}": _stacked(make, d)
        for k, make in (("cl", _channels_last), ("cl3d", _channels_last_3d))
        for d in (-1, 3, 5)
        if not (k == "cl" and d == 5)
    },
    **{f"cat_unsqueezed_{d}": _joined_unsqueezed(d) for d in (0, 1, 4)},
    "cat_channels_last": lambda m: _layout(m.cat([_channels_last(m)] * 2, 1)),
    "cat_mixed": lambda m: _layout(m.cat([_channels_last(m), _grid(m, 2, 3, 4, 5)])),
    "cat_cl3d": lambda m: _layout(m.cat([_channels_last_3d(m)] * 2, 2)),
    "cat_size_1_channels": lambda m: _layout(
        m.cat([_grid(m, 2, 1, 3, 3).contiguous(memory_format=m.channels_last)] * 2, 0)
    ),
    "last_mixed": lambda m: _layout(m.stack([_channels_last(m), _grid(m, 2, 3, 4, 5)], -1)),
    "last_transposed": lambda m: _layout(m.stack([_grid(m, 3, 2).t()] * 2, 2)),
    "last_gradient": lambda m: (lambda a: (m.stack([a, a * 2], -1).sum().backward(), a.grad)[1])(
        _channels_last(m).requires_grad_()
    ),
    **{f"out_cl_{d}": _stack_out(_channels_last, d) for d in (0, 1, 2, 3, 4)},
    **{f"out_cl3d_{d}": _stack_out(_channels_last_3d, d) for d in (0, 1, 2, 5)},
    "out_axis": lambda m: _stack_out(_channels_last, 0, axis=1)(m),
}


def _joined(op: str, call: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    return lambda m: call(getattr(m, op), _grid(m, 2, 3))


AXIS: dict[str, Callable[[Any], Any]] = {
    **{
        f"{op}_{form}": _joined(op, call)
        for op in ("cat", "stack", "concat", "concatenate")
        for form, call in {
            "axis": lambda f, t: f([t, t], axis=1),
            "axis_negative": lambda f, t: f([t, t], axis=-1),
            "dim_and_axis": lambda f, t: f([t, t], dim=1, axis=1),
            "positional_0_and_axis": lambda f, t: f([t, t], 0, axis=1),
            "unknown": lambda f, t: f([t, t], axes=1),
            "default": lambda f, t: f([t, t]),
            "out_axis": lambda f, t: f([t, t], axis=1, out=f([t, t], 0) * 0),
            "axis_out_of_range": lambda f, t: f([t, t], axis=3),
        }.items()
    },
}

# -- fill_(None), Function gradients, grad-mode clone(), outer of a number -------------------


def _function(backward: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """a.grad after backward through a * b, whose backward returns ``backward(m, g)``; b
    does not require grad."""

    def program(m: Any) -> Any:
        class Product(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: Any, b: Any) -> Any:
                return a * b

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return backward(m, g)

        a, b = m.ones(2, dtype=m.float64, requires_grad=True), m.ones(2, dtype=m.float64)
        Product.apply(a, b).sum().backward()
        return a.grad

    return program


def _clone_of(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        try:
            seen = [m.is_grad_enabled()]
            copy = make(m).clone()
            seen.append(m.is_grad_enabled())  # (set_grad_enabled's call switches at once)
            with copy:
                seen.append(m.is_grad_enabled())
            seen.append(m.is_grad_enabled())

            @make(m).clone()
            def f() -> bool:
                return m.is_grad_enabled()

            return type(copy).__name__, seen, f(), copy is not make(m)
        finally:
            m.set_grad_enabled(True)

    return program


SMALL: dict[str, Callable[[Any], Any]] = {
    "fill_none_int": lambda m: m.arange(3).fill_(None),
    "fill_none_bool": lambda m: m.ones(3, dtype=m.bool).fill_(None),
    "full_none": lambda m: m.full((2,), None),
    "gradient_float_for_no_grad_input": _function(lambda m, g: (g, 3.0)),
    "gradient_int_for_grad_input": _function(lambda m, g: (1, None)),
    "gradient_list": _function(lambda m, g: ([1.0, 1.0], None)),
    "wrong_shape_for_no_grad_input": _function(lambda m, g: (g, m.ones(3, 4))),
    "wrong_shape_for_grad_input": _function(lambda m, g: (m.ones(3, dtype=m.float64), None)),
    "none_for_both": _function(lambda m, g: (None, None)),
    **{
        f"clone_{k}": _clone_of(make)
        for k, make in {
            "no_grad": lambda m: m.no_grad(),
            "enable_grad": lambda m: m.enable_grad(),
            "set_grad_enabled_false": lambda m: m.set_grad_enabled(False),
            "inference_mode": lambda m: m.inference_mode(),
        }.items()
    },
    "outer_number_first": lambda m: m.outer(2, _grid(m, 3)),
    "outer_number_second": lambda m: m.outer(_grid(m, 3), 2.0),
    "outer_list": lambda m: m.outer(_grid(m, 3), [1.0, 2.0]),
    "outer_2d": lambda m: m.outer(_grid(m, 3), _grid(m, 2, 2)),
    "ger_number": lambda m: m.ger(_grid(m, 3), 2),
    "method_number": lambda m: _grid(m, 3).outer(2),
}

GROUPS = {"resized_out": RESIZED_OUT, "stack": STACK, "axis": AXIS, "small": SMALL}


@pytest.mark.parametrize("group", list(GROUPS))
def test_matches_torch(spec: str, group: str) -> None:
    same_each(GROUPS[group], spec, decimals=None)


#: Writes of a channels-last or transposed value into a C-ordered tensor of its shape.
KEPT_LAYOUTS: dict[str, Callable[[Any], Any]] = {
    "copy_channels_last": lambda m: m.zeros(2, 3, 4, 5, dtype=m.float64).copy_(_channels_last(m)),
    "copy_transposed": lambda m: m.zeros(3, 2, dtype=m.float64).copy_(_grid(m, 2, 3).t()),
    "add_out": lambda m: m.add(_channels_last(m), 1, out=m.zeros(2, 3, 4, 5, dtype=m.float64)),
    "stack_out_of_its_shape": lambda m: m.stack(
        [_channels_last(m)] * 2, 1, out=m.zeros(2, 2, 3, 4, 5, dtype=m.float64)
    ),
}


@pytest.mark.parametrize("case", list(KEPT_LAYOUTS))
def test_write_keeps_the_destinations_layout(spec: str, case: str) -> None:
    same_each({case: lambda m: _layout(KEPT_LAYOUTS[case](m))}, spec, decimals=None)
