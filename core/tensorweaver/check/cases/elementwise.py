"""Unary, binary and ternary primitives: every dtype the IR defines them for, and each in
every layout (transposed, stepped and broadcast views, empty, 0-d), alone and beside a
standard operand, against NumPy float64 (or exact ints)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import (
    ALL,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    in_layout,
    layout_dtypes,
    operand,
)
from tensorweaver.check.compare import widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE, SAME_SHAPE
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sign(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == bool else np.sign(x)


#: primitive -> (NumPy reference on widened operands, the dtypes the IR defines it for)
UNARY: dict[str, tuple[Callable, tuple[DType, ...]]] = {
    "neg": (np.negative, SIGNED + FLOATS),
    "abs": (np.abs, NUMERIC),
    "sign": (_sign, ALL),
    "exp": (np.exp, FLOATS),
    "log": (np.log, FLOATS),
    "sin": (np.sin, FLOATS),
    "cos": (np.cos, FLOATS),
    "tanh": (np.tanh, FLOATS),
    "sqrt": (np.sqrt, FLOATS),
    "erf": (_erf, FLOATS),
    "floor": (np.floor, FLOATS),
    "ceil": (np.ceil, FLOATS),
    "round": (np.rint, FLOATS),
    "trunc": (np.trunc, FLOATS),
    "logical_not": (np.logical_not, (d.bool_,)),
    "bitwise_not": (np.invert, (d.bool_, *INTS)),
}

BINARY: dict[str, tuple[Callable, tuple[DType, ...]]] = {
    "add": (np.add, NUMERIC),
    "sub": (np.subtract, NUMERIC),
    "mul": (np.multiply, NUMERIC),
    "div": (np.true_divide, FLOATS),
    "floordiv": (np.floor_divide, NUMERIC),  # NumPy's // and % are Python's
    "remainder": (np.remainder, NUMERIC),
    "pow": (np.power, NUMERIC),
    "maximum": (np.maximum, NUMERIC),
    "minimum": (np.minimum, NUMERIC),
    "eq": (np.equal, ALL),
    "ne": (np.not_equal, ALL),
    "lt": (np.less, ALL),
    "le": (np.less_equal, ALL),
    "gt": (np.greater, ALL),
    "ge": (np.greater_equal, ALL),
    "logical_and": (np.logical_and, (d.bool_,)),
    "logical_or": (np.logical_or, (d.bool_,)),
    "logical_xor": (np.logical_xor, (d.bool_,)),
    "bitwise_and": (np.bitwise_and, (d.bool_, *INTS)),
    "bitwise_or": (np.bitwise_or, (d.bool_, *INTS)),
    "bitwise_xor": (np.bitwise_xor, (d.bool_, *INTS)),
}
BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def reference(fn: Callable, *operands: np.ndarray) -> np.ndarray:
    """``fn`` on widened operands, without floating-point warnings."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(widen(np.asarray(o)) for o in operands)))


def _second(name: str, dtype: DType) -> str:
    # Negative integer exponents are outside the IR.
    return "exponents" if name == "pow" and dtype in INTS else "b"


def _unary(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    fn, _ = UNARY[name]

    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        yield ctx.check(name, ctx.call(name, x), reference(fn, a), dtype)
        yield ctx.untouched()

    return run


def _pairs(layout: str) -> list[tuple[str, str]]:
    """The operand layouts a binary case combines: both in ``layout``, and one beside a
    standard operand where the shapes allow (as ``x + y.expand(...)``); a 0-d operand
    goes with a standard one either way round, as the IR allows."""
    if layout == "0-d":
        return [("0-d", "standard"), ("standard", "0-d")]
    if layout in SAME_SHAPE:
        return [(layout, layout), ("standard", layout)]
    return [(layout, layout)]


def _binary(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    fn, _ = BINARY[name]
    out_dtype = d.bool_ if name in BOOL_RESULT else dtype

    def run(ctx: Context) -> Iterator[Measure]:
        for left, right in _pairs(layout):
            a, x = operand(ctx, dtype, "a", left)
            b, y = operand(ctx, dtype, _second(name, dtype), right)
            what = name if left == right else f"{name} ({left} with {right})"
            yield ctx.check(what, ctx.call(name, x, y), reference(fn, a, b), out_dtype)
        yield ctx.untouched()

    return run


def _where(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    # cond in the layout too; with 0-d branches, a standard cond sets the shape
    branches = [("0-d", "standard"), ("0-d", "0-d")] if layout == "0-d" else _pairs(layout)

    def run(ctx: Context) -> Iterator[Measure]:
        for left, right in branches:
            cond, c = operand(ctx, d.bool_, "a", "standard" if layout == "0-d" else layout)
            a, x = operand(ctx, dtype, "a", left)
            b, y = operand(ctx, dtype, "b", right)
            what = "where" if left == right else f"where ({left} with {right})"
            want = reference(np.where, cond, a, b)
            yield ctx.check(what, ctx.call("where", c, x, y), want, dtype, tolerance=0.0)
        yield ctx.untouched()

    return run


def _cases(name: str, dtypes: tuple[DType, ...], make: Callable[..., Any]) -> list[Case]:
    out = [Case(f"primitive/{name}/{t.name}", make(t, "standard")) for t in dtypes]
    edge = layout_dtypes(dtypes)
    return out + [Case(f"primitive/{name}/{lay}", in_layout(make, edge, lay)) for lay in EDGE]


def cases() -> list[Case]:
    out: list[Case] = []
    for name, (_, dtypes) in UNARY.items():
        out += _cases(name, dtypes, lambda t, layout, name=name: _unary(name, t, layout))
    for name, (_, dtypes) in BINARY.items():
        out += _cases(name, dtypes, lambda t, layout, name=name: _binary(name, t, layout))
    out += _cases("where", ALL, _where)
    return out
