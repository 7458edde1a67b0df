"""Movement primitives, and the optional select and split, on every dtype and layout: each
op is written for any ndim, so the same variants run on the standard (3, 4) operand and in
every layout of :mod:`tensorweaver.check.layouts`. Results must be exact."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Case, Failure, Measure, Skip
from tensorweaver.check.cases.operands import ALL, LAYOUT_FLOATS, in_layout, operand
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

#: What a variant yields: (what, the backend's result, NumPy's result).
Variants = Iterator[tuple[str, Any, np.ndarray]]


def _reshape(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    for shape in ((h.size,), (1, *h.shape), tuple(reversed(h.shape))):
        yield f"reshape to {shape}", ctx.call("reshape", x, shape), h.reshape(shape)


def _permute(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    perm = tuple(reversed(range(h.ndim)))
    yield f"permute {perm}", ctx.call("permute", x, perm), h.transpose(perm)


def _expand(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    # A new leading size-1 axis stretched to 2 (expand wants the same ndim).
    one = ctx.call("reshape", x, (1, *h.shape))
    shape = (2, *h.shape)
    yield f"expand to {shape}", ctx.call("expand", one, shape), np.broadcast_to(h, shape)


def _pad(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    widths = tuple((1, 2) if i % 2 == 0 else (0, 1) for i in range(h.ndim))
    value = True if h.dtype == bool else 7
    want = np.pad(h, widths, constant_values=value)
    yield f"pad {widths} with {value}", ctx.call("pad", x, widths, value), want


def _slice(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    starts = tuple(min(1, n) for n in h.shape)
    stops, steps = h.shape, (2,) * h.ndim
    want = h[tuple(slice(a, b, s) for a, b, s in zip(starts, stops, steps))]
    yield f"slice {starts}:{stops}:{steps}", ctx.call("slice", x, starts, stops, steps), want


def _flip(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    for axes in (tuple(range(h.ndim)), (h.ndim - 1,) if h.ndim else ()):
        yield f"flip {axes}", ctx.call("flip", x, axes), np.flip(h, axes) if axes else h


def _cat(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    for axis in range(h.ndim):
        yield f"cat along {axis}", ctx.call("cat", [x, x, x], axis), np.concatenate([h] * 3, axis)


OPS: dict[str, Callable[[Context, Any, np.ndarray], Variants]] = {
    "reshape": _reshape,
    "permute": _permute,
    "expand": _expand,
    "pad": _pad,
    "slice": _slice,
    "flip": _flip,
    "cat": _cat,
}


def _select(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    for axis, n in enumerate(h.shape):
        for index in sorted({0, n - 1}) if n else ():
            want = np.take(h, index, axis)
            yield f"select {index} along {axis}", ctx.call("select", x, axis, index), want


def _split(ctx: Context, x: Any, h: np.ndarray) -> Variants:
    for axis, n in enumerate(h.shape):
        for sizes in ((n,), (n // 2, 0, n - n // 2)):
            pieces = list(ctx.call("split", x, axis, sizes))
            if len(pieces) != len(sizes):
                raise Failure("split", f"cut {len(sizes)} sizes {sizes} into {len(pieces)} pieces")
            wants = np.split(h, np.cumsum(sizes)[:-1], axis)
            for i, (piece, want) in enumerate(zip(pieces, wants)):
                yield f"split {sizes} along {axis}, piece {i}", piece, want


#: Optional: the core slices (and reshapes) once per piece where a backend lacks them.
OPTIONAL_OPS: dict[str, Callable[[Context, Any, np.ndarray], Variants]] = {
    "select": _select,
    "split": _split,
}


def _case(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        variants = OPS.get(name) or OPTIONAL_OPS[name]
        if name in OPTIONAL_OPS and not callable(getattr(ctx.backend, name, None)):
            raise Skip(f"{ctx.device} has no {name} (optional: the core slices per piece)")
        h, x = operand(ctx, dtype, "a", layout)
        for what, out, want in variants(ctx, x, h):
            yield ctx.check(f"{name}: {what}", out, want, dtype, tolerance=0.0)
        yield ctx.untouched()

    return run


def _cat_with_empty_pieces(ctx: Context) -> Iterator[Measure]:
    a = np.arange(6.0).reshape(2, 3)
    x = ctx.put(a, d.float32)
    none = ctx.put(np.zeros((0, 3)), d.float32)
    want = np.concatenate([a, np.zeros((0, 3)), a])
    yield ctx.check("cat", ctx.call("cat", [x, none, x], 0), want, d.float32, 0.0)
    yield ctx.check("cat", ctx.call("cat", [none, none], 0), np.zeros((0, 3)), d.float32, 0.0)


def cases() -> list[Case]:
    out = []
    for group, names in (("primitive", OPS), ("optional", OPTIONAL_OPS)):
        for name in names:
            out += [Case(f"{group}/{name}/{t.name}", _case(name, t, "standard")) for t in ALL]
            # cat, pad, select and split act along axes: a 0-d array has none
            along = name in ("cat", "pad") or group == "optional"
            layouts = [lay for lay in EDGE if not (along and lay == "0-d")]
            out += [
                Case(f"{group}/{name}/{lay}", in_layout(partial(_case, name), LAYOUT_FLOATS, lay))
                for lay in layouts
            ]
    out.append(Case("primitive/cat/empty-pieces", _cat_with_empty_pieces))
    return out
