"""Unary, binary and ternary primitives: every dtype the IR defines them for, and each on
a strided view, an empty array and 0-d operands, against NumPy float64 (or exact ints)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import (
    ALL,
    EDGE_LAYOUTS,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    operand,
)
from tensorweaver.check.compare import widen
from tensorweaver.check.context import Context
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


def edge_dtype(dtypes: tuple[DType, ...]) -> DType:
    """The dtype the layout cases of an op use: float32 where the op takes it."""
    return next(t for t in (d.float32, d.int32, d.bool_) if t in dtypes)


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


def _binary(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    fn, _ = BINARY[name]
    out_dtype = d.bool_ if name in BOOL_RESULT else dtype
    # 0-d: the IR lets either operand be 0-d; check both ways round.
    pairs = [("0-d", "standard"), ("standard", "0-d")] if layout == "0-d" else [(layout, layout)]

    def run(ctx: Context) -> Iterator[Measure]:
        for left, right in pairs:
            a, x = operand(ctx, dtype, "a", left)
            b, y = operand(ctx, dtype, _second(name, dtype), right)
            what = name if left == right else f"{name} ({left} with {right})"
            yield ctx.check(what, ctx.call(name, x, y), reference(fn, a, b), out_dtype)
        yield ctx.untouched()

    return run


def _where(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    branches = [("0-d", "standard"), ("0-d", "0-d")] if layout == "0-d" else [(layout, layout)]

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
    edge = edge_dtype(dtypes)
    return out + [Case(f"primitive/{name}/{layout}", make(edge, layout)) for layout in EDGE_LAYOUTS]


def cases() -> list[Case]:
    out: list[Case] = []
    for name, (_, dtypes) in UNARY.items():
        out += _cases(name, dtypes, lambda t, layout, name=name: _unary(name, t, layout))
    for name, (_, dtypes) in BINARY.items():
        out += _cases(name, dtypes, lambda t, layout, name=name: _binary(name, t, layout))
    out += _cases("where", ALL, _where)
    return out
