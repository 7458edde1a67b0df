"""Elementwise ops: values against NumPy float64, gradients by finite differences, PyTorch's
semantics where they are specific (integer division signs, ties in max/clamp gradients, NaN),
over broadcasting, Python scalars on either side, 0-d, empty and non-contiguous inputs; and
the in-place ops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from hypothesis import given
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from tensor_reference import (
    HYPOTHESIS,
    LAYOUTS,
    assert_values,
    grads_like_torch,
    like_torch,
    signed,
    uniform,
)

erf = np.vectorize(math.erf, otypes=[np.float64])

# name: (low, high, NumPy float64 reference); inputs are drawn from [low, high).
UNARY = {
    "exp": (-2, 2, np.exp),
    "log": (0.2, 3, np.log),
    "log2": (0.2, 3, np.log2),
    "log10": (0.2, 3, np.log10),
    "log1p": (-0.5, 2, np.log1p),
    "expm1": (-2, 2, np.expm1),
    "sqrt": (0.2, 3, np.sqrt),
    "rsqrt": (0.2, 3, lambda x: 1 / np.sqrt(x)),
    "sin": (-3, 3, np.sin),
    "cos": (-3, 3, np.cos),
    "tan": (-1.2, 1.2, np.tan),
    "tanh": (-3, 3, np.tanh),
    "sigmoid": (-4, 4, lambda x: 1 / (1 + np.exp(-x))),
    "relu": (-2, 2, lambda x: np.maximum(x, 0.0)),
    "erf": (-2, 2, erf),
    "abs": (-2, 2, np.abs),
    "sign": (-2, 2, np.sign),
    "neg": (-2, 2, np.negative),
    "reciprocal": (0.3, 3, np.reciprocal),
    "square": (-2, 2, np.square),
    "floor": (-3, 3, np.floor),
    "ceil": (-3, 3, np.ceil),
    "round": (-3, 3, np.round),
    "trunc": (-3, 3, np.trunc),
    "nan_to_num": (-2, 2, np.nan_to_num),
}
CUNUMERIC_UNARY = ("exp", "log", "tanh", "sigmoid", "relu", "floor")


def unary_params():
    for op in UNARY:
        for layout in LAYOUTS:
            marks = pytest.mark.cunumeric if op in CUNUMERIC_UNARY and layout == "matrix" else ()
            yield pytest.param(op, layout, marks=marks, id=f"{op}-{layout}")


@pytest.mark.parametrize("op, layout", list(unary_params()))
def test_unary_values(backend, op, layout):
    low, high, reference = UNARY[op]
    shape, view = LAYOUTS[layout]
    x = uniform(shape, low, high)
    expected = reference(view(x))
    t = view(tw.tensor(x))
    assert_values(getattr(tw, op)(t), expected, dtype="float64")
    assert_values(getattr(t, op)(), expected, dtype="float64")


@pytest.mark.parametrize("op, layout", list(unary_params()))
def test_unary_gradients(backend, op, layout):
    low, high, _ = UNARY[op]
    shape, view = LAYOUTS[layout]
    gradcheck(lambda t: getattr(tw, op)(view(t)), uniform(shape, low, high, seed=1))


@pytest.mark.parametrize("op", UNARY.keys())
def test_unary_float32_like_torch(backend, op):
    low, high, _ = UNARY[op]
    like_torch(lambda m, t: getattr(m, op)(t), uniform((3, 4), low, high), dtype="float32")


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, 2.5, -2.5])


@pytest.mark.parametrize("op", UNARY.keys())
def test_unary_special_values_like_torch(backend, op):
    # Logs of negatives are NaN, of zero -inf; round halves to even; sign(NaN) is NaN.
    like_torch(lambda m, t: getattr(m, op)(t), SPECIAL)


def test_nan_to_num_replacements(backend):
    like_torch(lambda m, t: m.nan_to_num(t, nan=1.5, posinf=9.0, neginf=-9.0), SPECIAL)
    like_torch(lambda m, t: t.nan_to_num(), SPECIAL.astype(np.float32))


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite"])
def test_float_classification(backend, op):
    t = like_torch(lambda m, t: getattr(m, op)(t), SPECIAL)
    assert_values(t, getattr(np, op)(SPECIAL), dtype="bool")
    like_torch(lambda m, t: getattr(t, op)(), np.array([1, 2]))


# name: (call on tensors of either library, NumPy reference, differentiable); divisors and
# bases are drawn away from zero.
BINARY = {
    "add": (lambda m, a, b: a + b, np.add, True),
    "sub": (lambda m, a, b: a - b, np.subtract, True),
    "mul": (lambda m, a, b: a * b, np.multiply, True),
    "div": (lambda m, a, b: a / b, np.divide, True),
    "pow": (lambda m, a, b: a**b, np.power, True),
    "pow-function": (lambda m, a, b: m.pow(a, b), np.power, True),
    "maximum": (lambda m, a, b: m.maximum(a, b), np.maximum, True),
    "minimum": (lambda m, a, b: m.minimum(a, b), np.minimum, True),
    "floor_divide": (lambda m, a, b: a // b, np.floor_divide, False),
    "remainder": (lambda m, a, b: a % b, np.remainder, False),
}
# name: (shape of a, shape of b, view applied to a)
SHAPES = {
    "same": ((3, 4), (3, 4), lambda x: x),
    "row-col": ((3, 1), (1, 4), lambda x: x),
    "vector": ((4,), (3, 4), lambda x: x),
    "0d-left": ((), (3, 4), lambda x: x),
    "0d-right": ((2, 3), (), lambda x: x),
    "both-0d": ((), (), lambda x: x),
    "3d": ((2, 1, 4), (3, 1), lambda x: x),
    "empty": ((0, 4), (1, 4), lambda x: x),
    "transposed": ((4, 3), (3, 4), lambda x: x.mT),
    "strided": ((3, 8), (1, 4), lambda x: x[:, ::2]),
}


def binary_operands(shape_a, shape_b, seed=0):
    return signed(shape_a, seed=seed), signed(shape_b, seed=seed + 1)


def binary_params(differentiable_only=False):
    for op, (_, _, differentiable) in BINARY.items():
        if differentiable_only and not differentiable:
            continue
        for shapes in SHAPES:
            marks = pytest.mark.cunumeric if shapes in ("row-col", "0d-left") else ()
            yield pytest.param(op, shapes, marks=marks, id=f"{op}-{shapes}")


def base_for(op, a):
    """Powers take positive bases, so real results and gradients exist."""
    return np.asarray(np.abs(a)) if op.startswith("pow") else a


@pytest.mark.parametrize("op, shapes", list(binary_params()))
def test_binary_values(backend, op, shapes):
    fn, reference, _ = BINARY[op]
    shape_a, shape_b, view = SHAPES[shapes]
    a, b = binary_operands(shape_a, shape_b)
    a = base_for(op, a)
    result = fn(tw, view(tw.tensor(a)), tw.tensor(b))
    assert_values(result, reference(view(a), b), dtype="float64")


@pytest.mark.parametrize("op, shapes", list(binary_params(differentiable_only=True)))
def test_binary_gradients(backend, op, shapes):
    fn, _, _ = BINARY[op]
    shape_a, shape_b, view = SHAPES[shapes]
    a, b = binary_operands(shape_a, shape_b, seed=3)
    gradcheck(lambda x, y: fn(tw, view(x), y), base_for(op, a), b)


@pytest.mark.parametrize("op", BINARY.keys())
def test_binary_float32_like_torch(backend, op):
    fn, _, _ = BINARY[op]
    a, b = binary_operands((3, 1), (4,))
    like_torch(lambda m, x, y: fn(m, x, y), base_for(op, a), b, dtype="float32")


@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
@HYPOTHESIS
def test_broadcasting_any_shapes(backend, shapes):
    (shape_a, shape_b), result_shape = shapes
    a, b = binary_operands(shape_a, shape_b)
    out = tw.tensor(a) * tw.tensor(b) - tw.tensor(b)
    assert_values(out, a * b - b, dtype="float64")
    assert tuple(out.shape) == result_shape
    gradcheck(lambda x, y: x * y - y, a, b)


# expression: (function, low, high, differentiable); PyTorch has no gradient for //, nor
# for % by a tensor.
SCALAR_EXPRESSIONS = {
    "x + 2": (lambda x: x + 2, 0.5, 2, True),
    "3 + x": (lambda x: 3 + x, 0.5, 2, True),
    "x - 1.5": (lambda x: x - 1.5, 0.5, 2, True),
    "2 - x": (lambda x: 2 - x, 0.5, 2, True),
    "x * 3": (lambda x: x * 3, 0.5, 2, True),
    "-0.5 * x": (lambda x: -0.5 * x, 0.5, 2, True),
    "x / 4": (lambda x: x / 4, 0.5, 2, True),
    "2 / x": (lambda x: 2 / x, 0.5, 2, True),
    "x ** 2": (lambda x: x**2, -2, 2, True),
    "x ** 3": (lambda x: x**3, -2, 2, True),
    "x ** 0.5": (lambda x: x**0.5, 0.5, 2, True),
    "x ** -1": (lambda x: x**-1, 0.5, 2, True),
    "x ** 0": (lambda x: x**0, 0.5, 2, True),
    "2 ** x": (lambda x: 2**x, -2, 2, True),
    "-x": (lambda x: -x, -2, 2, True),
    "abs(x)": (lambda x: abs(x), -2, 2, True),
    "x // 0.75": (lambda x: x // 0.75, -2, 2, False),
    "x % 0.75": (lambda x: x % 0.75, -2, 2, True),
    "1.5 % x": (lambda x: 1.5 % x, 0.5, 2, False),
}


@pytest.mark.parametrize("expression", SCALAR_EXPRESSIONS.keys())
def test_python_scalars_on_either_side(backend, expression):
    fn, low, high, differentiable = SCALAR_EXPRESSIONS[expression]
    x = uniform((2, 3), low, high)
    assert_values(fn(tw.tensor(x)), fn(x), dtype="float64")
    if differentiable:
        gradcheck(fn, x)
    like_torch(lambda m, t: fn(t), x, dtype="float32")


def test_pow_gradient_at_zero_like_torch(backend):
    zeros = np.array([0.0, 0.0, 1.5])
    grads_like_torch(lambda m, x: x**2, zeros)
    grads_like_torch(lambda m, x: x**0, zeros)
    grads_like_torch(lambda m, x: m.pow(x, 3.0), zeros)
    grads_like_torch(
        lambda m, x, y: m.pow(x, y), np.array([0.0, 2.0, 1.5]), np.array([2.0, 0.0, 1.0])
    )


SIGNED_A = np.array([-7, -6, -1, 0, 1, 6, 7])[:, None]
SIGNED_B = np.array([-3, 3, -2, 2, 5])[None, :]


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "float64", "float32"])
def test_floor_division_and_remainder_signs(backend, dtype):
    # As Python's // and %: the quotient rounds toward -inf, the remainder has b's sign.
    quotient = like_torch(lambda m, a, b: a // b, SIGNED_A, SIGNED_B, dtype=dtype)
    remainder = like_torch(lambda m, a, b: a % b, SIGNED_A, SIGNED_B, dtype=dtype)
    python = [[(x // y, x % y) for y in SIGNED_B[0]] for x in SIGNED_A[:, 0]]
    assert_values(quotient, np.array(python)[..., 0])
    assert_values(remainder, np.array(python)[..., 1])
    halves = SIGNED_A + 0.5
    like_torch(lambda m, a, b: a // b, halves, SIGNED_B, dtype="float64")
    like_torch(lambda m, a, b: a % b, halves, SIGNED_B, dtype="float64")


def test_float_division_by_zero_is_ieee(backend):
    a = np.array([1.0, -1.0, 0.0, 2.0])
    b = np.array([0.0, 0.0, 0.0, -0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        assert_values(tw.tensor(a) / tw.tensor(b), a / b)
    like_torch(lambda m, x, y: x / y, a, b)
    like_torch(lambda m, x: 1 / x, b)


def test_maximum_minimum_propagate_nan(backend):
    a = np.array([np.nan, 1.0, 2.0, -np.inf])
    b = np.array([0.0, np.nan, 1.0, np.inf])
    assert_values(tw.maximum(tw.tensor(a), tw.tensor(b)), np.maximum(a, b))
    assert_values(tw.minimum(tw.tensor(a), tw.tensor(b)), np.minimum(a, b))


def test_maximum_minimum_split_gradient_on_ties_like_torch(backend):
    a, b = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, 2.0, 1.0, 3.0])
    grads_like_torch(lambda m, x, y: m.maximum(x, y), a, b)
    grads_like_torch(lambda m, x, y: m.minimum(x, y), a, b)
    grads_like_torch(lambda m, x: m.maximum(x, x), a)


CLAMPS = {
    "both": lambda m, x: m.clamp(x, min=-0.5, max=0.75),
    "min": lambda m, x: m.clamp(x, min=-0.5),
    "max": lambda m, x: x.clamp(max=0.75),
    "clip": lambda m, x: m.clip(x, -0.5, 0.75),
    "int-bounds": lambda m, x: x.clamp(-1, 1),
    "min-above-max": lambda m, x: m.clamp(x, min=1.0, max=0.0),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("variant", CLAMPS.keys())
def test_clamp(backend, variant):
    fn = CLAMPS[variant]
    x = uniform((3, 4), seed=4)
    like_torch(fn, x)
    gradcheck(lambda t: fn(tw, t), x)
    like_torch(fn, np.array([-3, 0, 2, 5]))


def test_clamp_gradient_at_its_bounds_like_torch(backend):
    grads_like_torch(lambda m, x: m.clamp(x, min=-0.5, max=0.75), np.array([-0.5, 0.75, 0.0, 2.0]))


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "shapes", [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), ()), ((4,), (2, 1, 4), (1, 4))]
)
def test_where(backend, shapes):
    shape_c, shape_a, shape_b = shapes
    cond = uniform(shape_c, seed=5) > 0
    a, b = uniform(shape_a, seed=6), uniform(shape_b, seed=7)
    assert_values(tw.where(tw.tensor(cond), tw.tensor(a), tw.tensor(b)), np.where(cond, a, b))
    gradcheck(lambda x, y: tw.where(tw.tensor(cond), x, y), a, b)
    like_torch(lambda m, c, x: m.where(c, x, 0.5), cond, a.astype(np.float32))
    like_torch(lambda m, c, y: m.where(c, 2, y), cond, b.astype(np.float32))


@pytest.mark.parametrize("weight", ["scalar", "tensor"])
def test_lerp(backend, weight):
    start, end = uniform((3, 4), seed=8), uniform((1, 4), seed=9)
    w = 0.3 if weight == "scalar" else uniform((3, 1), 0, 1, seed=10)
    expected = start + w * (end - start)
    if weight == "scalar":
        assert_values(tw.lerp(tw.tensor(start), tw.tensor(end), w), expected)
        gradcheck(lambda s, e: tw.lerp(s, e, w), start, end)
    else:
        assert_values(tw.tensor(start).lerp(tw.tensor(end), tw.tensor(w)), expected)
        gradcheck(lambda s, e, v: tw.lerp(s, e, v), start, end, w)


COMPARISONS = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("op", COMPARISONS.keys())
def test_comparisons(backend, op):
    fn = COMPARISONS[op]
    a = np.array([[1.0, 2.0, np.nan], [-np.inf, 0.0, -0.0]])
    b = np.array([2.0, 2.0, np.nan])
    x = tw.tensor(a, requires_grad=True)
    result = fn(x, tw.tensor(b))
    assert_values(result, fn(a, b), dtype="bool")
    assert not result.requires_grad
    assert_values(fn(x, 0.0), fn(a, 0.0), dtype="bool")
    assert_values(fn(1, tw.tensor(b)), fn(1, b), dtype="bool")
    like_torch(lambda m, p, q: fn(p, q), np.array([[1, 5]]), np.array([[1], [4]]))


BITWISE = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not": lambda a, b: ~a,
}


@pytest.mark.parametrize("op", BITWISE.keys())
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64"])
def test_bitwise(backend, op, dtype):
    fn = BITWISE[op]
    a = np.array([[0, 1, 5, 12], [3, 0, 7, 1]]).astype(dtype)
    b = np.array([1, 3, 6, 0]).astype(dtype)
    assert_values(fn(tw.tensor(a), tw.tensor(b)), fn(a, b), dtype=dtype)
    like_torch(lambda m, x, y: fn(x, y), a, b)
    like_torch(lambda m, x: fn(x, True), a)


# In-place ops, each returning the tensor it changed: (call, arguments as host arrays).
IN_PLACE = {
    "add_": (lambda x, y: x.add_(y), ((1, 4),)),
    "add_-alpha": (lambda x, y: x.add_(y, alpha=-2.0), ((3, 1),)),
    "sub_": (lambda x, y: x.sub_(y), ((),)),
    "sub_-alpha": (lambda x, y: x.sub_(y, alpha=0.5), ((4,),)),
    "mul_": (lambda x, y: x.mul_(y), ((3, 4),)),
    "mul_-scalar": (lambda x: x.mul_(2.5), ()),
    "div_": (lambda x, y: x.div_(y), ((1, 4),)),
    "addcmul_": (lambda x, y, z: x.addcmul_(y, z, value=0.5), ((3, 4), (4,))),
    "addcdiv_": (lambda x, y, z: x.addcdiv_(y, z, value=-2.0), ((3, 1), (3, 4))),
    "lerp_": (lambda x, y: x.lerp_(y, 0.25), ((3, 4),)),
    "lerp_-tensor": (lambda x, y, w: x.lerp_(y, w), ((4,), (3, 1))),
    "clamp_": (lambda x: x.clamp_(min=-0.5, max=0.5), ()),
    "sqrt_": (lambda x: x.sqrt_(), ()),
    "neg_": (lambda x: x.neg_(), ()),
    "zero_": (lambda x: x.zero_(), ()),
    "fill_": (lambda x: x.fill_(-1.25), ()),
    "copy_": (lambda x, y: x.copy_(y), ((1, 4),)),
    "masked_fill_": (lambda x, y: x.masked_fill_(y > 1, 3.0), ((3, 4),)),
    "iadd": (lambda x, y: x.__iadd__(y), ((4,),)),
    "imul": (lambda x, y: x.__imul__(y), ((3, 1),)),
    "isub": (lambda x, y: x.__isub__(y), ((),)),
    "itruediv": (lambda x, y: x.__itruediv__(y), ((1, 4),)),
}


@pytest.mark.parametrize("op", IN_PLACE.keys())
def test_in_place_ops_like_torch(backend, op):
    fn, shapes = IN_PLACE[op]
    x = uniform((3, 4), 0.5, 2.0, seed=11)
    args = [uniform(shape, 0.5, 2.0, seed=12 + i) for i, shape in enumerate(shapes)]

    def returns_itself(m, target, *others):
        result = fn(target, *others)
        return result is target, target

    like_torch(returns_itself, x, *args)


@pytest.mark.cunumeric
def test_in_place_under_no_grad_updates_a_leaf(backend):
    w = tw.tensor([1.0, 2.0], requires_grad=True)
    with tw.no_grad():
        w.mul_(3.0)
        w.add_(tw.tensor([0.5, 0.5]), alpha=2.0)
    assert w.requires_grad and w.is_leaf and w.grad is None
    assert_values(w, [4.0, 7.0])
    (w * w).sum().backward()
    assert_values(w.grad, [8.0, 14.0])


IN_PLACE_GRAPHS = {
    "add_-mul_": lambda x: (x * 2).add_(1).mul_(x),
    "iadd": lambda x: x.__mul__(3).__iadd__(x.sin()),
    "addcmul_-clamp_-neg_-div_": lambda x: (
        (x * 2).addcmul_(x, x, value=0.5).clamp_(min=1.0).neg_().div_(x)
    ),
    "sub_-alpha": lambda x: (x + 0).sub_(x.exp(), alpha=2.0),
    "masked_fill_": lambda x: (x * x).masked_fill_(x > 1, 0.0),
}


@pytest.mark.parametrize("graph", IN_PLACE_GRAPHS.keys())
def test_in_place_on_intermediates_is_differentiable(backend, graph):
    fn = IN_PLACE_GRAPHS[graph]
    x = uniform((2, 3), 0.5, 2.0, seed=13)
    gradcheck(fn, x)
    grads_like_torch(lambda m, t: fn(t), x)


def test_abs_and_relu_gradient_at_zero_like_torch(backend):
    x = np.array([0.0, -1.0, 2.0])
    grads_like_torch(lambda m, t: t.abs(), x)
    grads_like_torch(lambda m, t: m.relu(t), x)
    grads_like_torch(lambda m, t: m.sign(t), x)
