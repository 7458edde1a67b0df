"""Result dtypes follow PyTorch's promotion rules: every pair of dtypes, Python scalars and
0-d tensors (which count by category only), unary float ops on integers, reductions, and
in-place ops (which keep their own dtype). Each case is also compared by value.

Tests that sweep many dtype combinations collect every mismatch and report them together.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import (
    REAL_DTYPE_NAMES,
    assert_like_torch,
    like_torch,
    make,
    raises_like_torch,
    supports,
)

DTYPES = REAL_DTYPE_NAMES
# Small nonzero values keep every result (also 5 ** 3 in int8) in range and divisors nonzero.
A = np.array([[1, 2, 3], [5, 4, 1]])
B = np.array([[2, 1, 3], [1, 2, 3]])


def mismatches(fn: Callable[..., Any], cases: dict[str, tuple[tuple[Any, str | None], ...]]):
    """The cases where ``fn(m, *operands)`` on tensorweaver differs from PyTorch (skipping
    those PyTorch rejects, and dtypes the device lacks); an operand is ``(value, dtype)``
    and a dtype of None keeps a Python scalar."""
    found = []
    for label, operands in cases.items():
        if not all(d is None or supports(d) for _, d in operands):
            continue
        try:
            theirs = fn(torch, *(v if d is None else make(torch, v, d) for v, d in operands))
        except Exception:
            continue
        try:
            ours = fn(tw, *(v if d is None else make(tw, v, d) for v, d in operands))
            assert_like_torch(ours, theirs)
        except Exception as exc:
            found.append(f"{label}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return found


BINARY = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "floor_divide": lambda m, a, b: a // b,
    "remainder": lambda m, a, b: a % b,
    "pow": lambda m, a, b: a**b,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b),
    "eq": lambda m, a, b: a == b,
    "lt": lambda m, a, b: a < b,
    "bitwise_and": lambda m, a, b: a & b,
    "bitwise_xor": lambda m, a, b: a ^ b,
    "where": lambda m, a, b: m.where(a > b, a, b),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("op", BINARY.keys())
def test_every_dtype_pair_promotes_like_torch(backend, op):
    pairs = {f"{x}, {y}": ((A, x), (B, y)) for x in DTYPES for y in DTYPES}
    assert mismatches(BINARY[op], pairs) == []


SCALARS = {"True": True, "3": 3, "-2": -2, "2.5": 2.5}
WITH_SCALAR = {
    "t + s": lambda m, t, s: t + s,
    "s + t": lambda m, t, s: s + t,
    "s - t": lambda m, t, s: s - t,
    "t * s": lambda m, t, s: t * s,
    "t / s": lambda m, t, s: t / s,
    "s / t": lambda m, t, s: s / t,
    "t // s": lambda m, t, s: t // s,
    "t % s": lambda m, t, s: t % s,
    "t ** s": lambda m, t, s: t**s,
    "s ** t": lambda m, t, s: s**t,
    "t > s": lambda m, t, s: t > s,
    "t == s": lambda m, t, s: t == s,
    "maximum": lambda m, t, s: m.maximum(t, m.tensor(s)),
    "where": lambda m, t, s: m.where(t > 2, t, s),
    "clamp": lambda m, t, s: m.clamp(t, min=s),
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_python_scalars_promote_by_category_like_torch(backend, dtype):
    found = []
    for op, fn in WITH_SCALAR.items():
        cases = {f"{op} with {dtype} t, s={s}": ((A, dtype), (v, None)) for s, v in SCALARS.items()}
        found += mismatches(fn, cases)
    assert found == []


# ``t`` has shape (2, 3) and ``s`` is 0-d, both of the dtype under test; ``z`` is 0-d of every
# dtype. A 0-d operand counts only by its category (bool, integer, float) unless both are 0-d.
ZERO_DIM = {
    "t + z": lambda m, t, s, z: t + z,
    "z * t": lambda m, t, s, z: z * t,
    "maximum(t, z)": lambda m, t, s, z: m.maximum(t, z),
    "s - z": lambda m, t, s, z: s - z,
}


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_dim_tensors_promote_by_category_like_torch(backend, dtype):
    found = []
    for op, fn in ZERO_DIM.items():
        cases = {
            f"{op} with {dtype} t and s, {other} z": (
                (A, dtype),
                (np.array(5), dtype),
                (np.array(2), other),
            )
            for other in DTYPES
        }
        found += mismatches(fn, cases)
    assert found == []


UNARY = (
    "exp",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "tanh",
    "sigmoid",
    "erf",
    "reciprocal",
    "abs",
    "neg",
    "sign",
    "square",
    "floor",
    "round",
    "trunc",
    "relu",
    "isnan",
    "isfinite",
    "nan_to_num",
)


@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_on_every_dtype_like_torch(backend, op):
    cases = {dtype: ((A, dtype),) for dtype in DTYPES}
    assert mismatches(lambda m, t: getattr(m, op)(t), cases) == []


REDUCTIONS = {
    "sum": lambda m, t: t.sum(),
    "sum(dim)": lambda m, t: t.sum(dim=1),
    "prod": lambda m, t: t.prod(dim=0),
    "mean": lambda m, t: t.mean(),
    "amax": lambda m, t: t.amax(dim=1),
    "max": lambda m, t: t.max(),
    "max(dim)": lambda m, t: t.max(dim=1),
    "argmax": lambda m, t: t.argmax(),
    "cumsum": lambda m, t: t.cumsum(dim=1),
    "var": lambda m, t: t.var(dim=1),
    "norm": lambda m, t: t.norm(),
    "logsumexp": lambda m, t: t.logsumexp(dim=1),
    "count_nonzero": lambda m, t: t.count_nonzero(),
    "all": lambda m, t: t.all(),
    "any": lambda m, t: t.any(dim=0),
}


@pytest.mark.parametrize("op", REDUCTIONS.keys())
def test_reduction_dtypes_like_torch(backend, op):
    # PyTorch's all/any on uint8 return uint8 for backward compatibility, a legacy rule.
    dtypes = [d for d in DTYPES if not (d == "uint8" and op in ("all", "any"))]
    cases = {dtype: ((A, dtype),) for dtype in dtypes}
    assert mismatches(REDUCTIONS[op], cases) == []


@pytest.mark.parametrize("op", ["mean", "var", "std"])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_float_only_reductions_reject_integers(backend, op, dtype):
    raises_like_torch(lambda m, t: getattr(t, op)(), A, dtype=dtype, match=[op])


IN_PLACE = {
    "add_": lambda m, x, y: x.add_(y),
    "mul_": lambda m, x, y: x.mul_(y),
    "sub_": lambda m, x, y: x.sub_(y, alpha=2),
    "copy_": lambda m, x, y: x.copy_(y),
    "iadd": lambda m, x, y: x.__iadd__(y),
}


@pytest.mark.parametrize("op", IN_PLACE.keys())
def test_in_place_ops_keep_their_dtype(backend, op):
    pairs = {
        f"{x} <- {y}": ((A, x), (B, y))
        for x in ("float16", "float32", "float64", "int32", "int64")
        for y in ("bool", "int64", "float32", "float64")
    }
    assert mismatches(IN_PLACE[op], pairs) == []


def test_in_place_cannot_cast_float_into_integers(backend):
    raises_like_torch(
        lambda m, x, y: x.add_(y), A, B.astype(np.float32), match=["int64", "float32"]
    )


def test_true_division_of_integers_gives_the_default_float(backend):
    t = like_torch(lambda m, a, b: a / b, A, B)
    assert t.dtype is tw.float32
    like_torch(lambda m, a: a / 2, A.astype(np.int8))
