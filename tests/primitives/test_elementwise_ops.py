"""Unary, binary and ternary primitives: values, IEEE special cases, dtypes and layouts."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from primitive_checks import (
    ALL,
    FLOATS,
    INTS,
    NO_FP_WARNINGS,
    SIGNED,
    check,
    exact,
    host,
    inf,
    nan,
    put,
    quiet_ref,
)
from tensorweaver.check.cases.elementwise import BINARY as KIT_BINARY
from tensorweaver.check.cases.elementwise import BOOL_RESULT
from tensorweaver.check.cases.elementwise import UNARY as KIT_UNARY
from tensorweaver.contract import dtypes as d

pytestmark = NO_FP_WARNINGS

#: The kit's NumPy references (tensorweaver/check/cases/elementwise.py) on this folder's
#: dtypes (no bfloat16), the binary ones on fewer: signed-int floordiv and remainder have
#: their own test (test_integer_floordiv_and_remainder_follow_python).
SOME_INTS = (d.uint8, d.int8, d.int64)
COMPARED = (d.bool_, d.int8, d.float16, d.float64)
_DTYPES_HERE = {
    "floordiv": (d.uint8, *FLOATS),
    "remainder": (d.uint8, *FLOATS),
    "maximum": SOME_INTS + FLOATS,
    "minimum": SOME_INTS + FLOATS,
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge"), COMPARED),
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor"), (d.bool_, *SOME_INTS)),
}


def _here(dtypes: tuple) -> tuple:
    return tuple(t for t in dtypes if t in ALL)


UNARY = {name: (ref, _here(dtypes)) for name, (ref, dtypes) in KIT_UNARY.items()}
BINARY = {
    name: (ref, _DTYPES_HERE.get(name, _here(dtypes))) for name, (ref, dtypes) in KIT_BINARY.items()
}


def cases(table: dict) -> list:
    return [
        pytest.param(name, dtype, id=f"{name}-{dtype.name}")
        for name, (_, dtypes) in table.items()
        for dtype in dtypes
    ]


@pytest.mark.parametrize("name, dtype", cases(UNARY))
def test_unary(backend, standard, name, dtype):
    ref, _ = UNARY[name]
    a, x = standard.get(dtype, "a")
    check(backend, getattr(backend, name)(x), quiet_ref(ref, exact(a)), dtype)


@pytest.mark.parametrize("name, dtype", cases(BINARY))
def test_binary(backend, standard, name, dtype):
    ref, _ = BINARY[name]
    a, x = standard.get(dtype, "a")
    # negative integer exponents are outside the IR
    b, y = standard.get(dtype, "exponents" if name == "pow" and dtype in INTS else "b")
    out = getattr(backend, name)(x, y)
    want = quiet_ref(ref, exact(a), exact(b))
    check(backend, out, want, d.bool_ if name in BOOL_RESULT else dtype)


# Python's // and % on finite operands of every sign, including the awkward ones: a tiny
# negative dividend (-1e-20 % 1 is 1.0 in float64), and infinite divisors.
FLOOR_CASES = [
    (7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (-1e-20, 1.0), (1e-20, -1.0),
    (5.0, inf), (-5.0, inf), (5.0, -inf), (0.0, -3.0), (6.0, 0.75), (-6.0, 0.75),
]  # fmt: skip


@pytest.mark.parametrize("dtype", (d.float32, d.float64), ids=lambda t: t.name)
@pytest.mark.parametrize("name, op", [("floordiv", operator.floordiv), ("remainder", operator.mod)])
def test_floordiv_and_remainder_follow_python(backend, dtype, name, op):
    a = host([x for x, _ in FLOOR_CASES], dtype)
    b = host([y for _, y in FLOOR_CASES], dtype)
    want = [op(x, y) for x, y in zip(exact(a).tolist(), exact(b).tolist())]
    check(
        backend, getattr(backend, name)(put(backend, a, dtype), put(backend, b, dtype)), want, dtype
    )


@pytest.mark.parametrize("dtype", SIGNED, ids=lambda t: t.name)
def test_integer_floordiv_and_remainder_follow_python(backend, standard, dtype):
    (a, x), (b, y) = standard.get(dtype, "a"), standard.get(dtype, "b")
    pairs = list(zip(a.ravel().tolist(), b.ravel().tolist()))
    check(backend, backend.floordiv(x, y), np.reshape([p // q for p, q in pairs], a.shape), dtype)
    check(backend, backend.remainder(x, y), np.reshape([p % q for p, q in pairs], a.shape), dtype)


def test_erf_to_full_precision(backend):
    # Over 1024 elements (NumPy's backend switches algorithm there), tails and tiny values.
    x = np.concatenate(
        [np.linspace(-7, 7, 3001), np.geomspace(1e-300, 1, 200), -np.geomspace(1e-8, 6, 200)]
    )
    erf = UNARY["erf"][0]
    check(backend, backend.erf(put(backend, x, d.float64)), erf(x), d.float64, rtol=1e-15)
    want = erf(exact(host(x, d.float32)))
    check(backend, backend.erf(put(backend, x, d.float32)), want, d.float32)
    specials = [nan, inf, -inf, 0.0]
    check(
        backend,
        backend.erf(put(backend, specials * 300, d.float64)),
        [nan, 1, -1, 0] * 300,
        d.float64,
    )


@pytest.mark.parametrize("dtype", ALL, ids=lambda t: t.name)
def test_where(backend, standard, dtype):
    (a, x), (b, y) = standard.get(dtype, "a"), standard.get(dtype, "b")
    cond, c = standard.get(d.bool_, "a")
    check(backend, backend.where(c, x, y), np.where(cond, exact(a), exact(b)), dtype, rtol=0)


@pytest.mark.parametrize(
    "name, a_shape, b_shape",
    [
        ("add", (3, 4), ()),
        ("sub", (), (3, 4)),
        ("div", (3, 4), ()),
        ("div", (), (3, 4)),
        ("pow", (3, 4), ()),
        ("maximum", (), (3, 4)),
        ("lt", (3, 4), ()),
        ("add", (), ()),
    ],
)
def test_binary_with_0d_operands(backend, standard, name, a_shape, b_shape):
    ref, _ = BINARY[name]
    a, x = (host(1.5, d.float32), None) if a_shape == () else standard.get(d.float32, "a")
    b, y = (host(-2.0, d.float32), None) if b_shape == () else standard.get(d.float32, "b")
    x = put(backend, a, d.float32) if x is None else x
    y = put(backend, b, d.float32) if y is None else y
    out = getattr(backend, name)(x, y)
    want = quiet_ref(ref, exact(a), exact(b))
    check(backend, out, want, d.bool_ if name in BOOL_RESULT else d.float32)


def test_where_with_0d_branches(backend):
    cond = np.array([[True, False], [False, True]])
    out = backend.where(
        put(backend, cond, d.bool_),
        put(backend, 1, d.int32),
        put(backend, [[5, 6], [7, 8]], d.int32),
    )
    check(backend, out, [[1, 6], [7, 1]], d.int32)
    both = backend.where(
        put(backend, cond, d.bool_), put(backend, 2.5, d.float64), put(backend, nan, d.float64)
    )
    check(backend, both, [[2.5, nan], [nan, 2.5]], d.float64)


def test_0d_results_feed_further_ops(backend):
    x = put(backend, 0.25, d.float32)
    y = backend.exp(backend.add(x, x))  # the add's 0-d result goes into exp
    check(backend, backend.mul(y, y), math.exp(1.0), d.float32)


LAYOUT_OPS = ["neg", "abs", "exp", "sqrt", "erf", "round", "add", "div", "pow", "remainder",
              "maximum", "lt"]  # fmt: skip


#: layout -> (a view made with primitives of a (3, 4) backend array, the same view on the host)
LAYOUTS = {
    # every other row of the transpose: (2, 3), no unit stride
    "strided": (
        lambda bk, v: bk.slice(bk.permute(v, (1, 0)), (0, 0), (4, 3), (2, 1)),
        lambda h: h.T[::2],
    ),
    "empty": (lambda bk, v: bk.slice(v, (0, 0), (0, 4), (1, 1)), lambda h: h[:0]),
    # element (0, 2): 1.5 of a, 0.0 of b
    "0-d": (lambda bk, v: bk.reshape(bk.slice(v, (0, 2), (1, 3), (1, 1)), ()), lambda h: h[0, 2]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_elementwise_on_any_layout(backend, standard, layout):
    on_backend, on_host = LAYOUTS[layout]
    (a, x), (b, y) = standard.get(d.float32, "a"), standard.get(d.float32, "b")
    x, y, a, b = on_backend(backend, x), on_backend(backend, y), on_host(a), on_host(b)
    for name in LAYOUT_OPS:
        if name in UNARY:
            out, want = getattr(backend, name)(x), quiet_ref(UNARY[name][0], exact(a))
        else:
            out, want = getattr(backend, name)(x, y), quiet_ref(BINARY[name][0], exact(a), exact(b))
        check(backend, out, want, d.bool_ if name in BOOL_RESULT else d.float32, what=name)
    cond = put(backend, np.asarray(a) > 0, d.bool_)
    check(backend, backend.where(cond, x, y), np.where(np.asarray(a) > 0, a, b), d.float32)
