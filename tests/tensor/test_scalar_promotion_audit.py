"""Python numbers, dtypes and dims against PyTorch: every case runs on TensorWeaver and on
torch, and must give PyTorch's dtype, shape and values, or an error of PyTorch's class.

The sweeps cross ops with every dtype, Python scalars of each kind (bool, int, negative and
out-of-range ints, float, NaN, inf, complex) and 1-d, 0-d and empty inputs: each is one
test per op that loops over the rest (the loops are cheap; a test per case is not).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import REAL_DTYPE_NAMES, assert_like_torch, builtin_class, supports

DTYPES = REAL_DTYPE_NAMES
SCALARS = [True, 0, 3, -3, 300, -300, 2**40, 2.5, -0.5, math.nan, math.inf, 1 + 2j]


def _data(m: Any, dtype: str, shape: str = "v") -> Any:
    """A 1-d (``v``), 0-d (``0``) or empty (``e``) tensor of ``dtype`` with zeros and signs."""
    values = {
        "bool": [True, False, True, True, False],
        "uint8": [0, 1, 2, 200, 255],
    }.get(dtype, [-3, 0, 2, 5, -7])
    if dtype.startswith(("float", "bfloat")):
        values = [-1.5, 0.0, 2.5, 7.0, -3.0]
    t = m.tensor(values, dtype=getattr(m, dtype))
    return {"v": t, "0": t[2], "e": t[:0]}[shape]


def same_as_torch(case: str, fn: Callable[..., Any], *args: Any) -> None:
    """``fn(tw, *args)`` gives ``fn(torch, *args)``'s result, or raises PyTorch's class of
    error."""
    try:
        theirs = fn(torch, *args)
    except Exception as e:  # noqa: BLE001 - PyTorch's class is the expectation
        with pytest.raises(builtin_class(e)):
            fn(tw, *args)
        return
    try:
        ours = fn(tw, *args)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{case}: PyTorch succeeds, TensorWeaver raises {e!r}") from e
    try:
        assert_like_torch(ours, theirs)
    except AssertionError as e:
        raise AssertionError(f"{case}: {e}") from None


def _dtypes() -> list[str]:
    return [d for d in DTYPES if supports(d)]


def _compared(dtype: str, scalar: Any, op: str) -> bool:
    """Cases this audit compares. Left out: complex numbers with float16 (PyTorch's
    complex32 is no TensorWeaver dtype), and huge numbers in float16 and bfloat16 products,
    which PyTorch computes in float32 (0 * 2**40 is 0 there, NaN in half precision)."""
    if isinstance(scalar, complex) and (dtype == "float16" or op == "rpow"):
        return False  # and complex powers, which round differently (exp(log) in PyTorch)
    return not (dtype in ("float16", "bfloat16") and scalar == 2**40 and op in _HALF_OPMATH)


def _mask(m: Any, t: Any) -> Any:
    return t if t.dtype == m.bool else t > 1


SCALAR_OPS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add": lambda m, t, s: t + s,
    "rsub": lambda m, t, s: s - t,
    "sub": lambda m, t, s: t - s,
    "mul": lambda m, t, s: t * s,
    "div": lambda m, t, s: t / s,
    "floor_divide": lambda m, t, s: t // s,
    "remainder": lambda m, t, s: t % s,
    "div_trunc": lambda m, t, s: m.div(t, s, rounding_mode="trunc"),
    "pow": lambda m, t, s: t**s,
    "rpow": lambda m, t, s: s**t,
    "lt": lambda m, t, s: t < s,
    "eq": lambda m, t, s: t == s,
    "and": lambda m, t, s: t & s,
    "lshift": lambda m, t, s: t << s,
    "where": lambda m, t, s: m.where(_mask(m, t), t, s),
    "where_first": lambda m, t, s: m.where(_mask(m, t), s, t),
    "clamp_min": lambda m, t, s: m.clamp(t, min=s),
    "clamp_max": lambda m, t, s: m.clamp(t, max=s),
    "fill_": lambda m, t, s: t.clone().fill_(s),
    "full_like": lambda m, t, s: m.full_like(t, s),
    "masked_fill": lambda m, t, s: t.masked_fill(m.tensor(True), s),
    "add_alpha": lambda m, t, s: m.add(t, t, alpha=s),
    "sub_alpha": lambda m, t, s: m.sub(t, t, alpha=s),
    "addcmul": lambda m, t, s: m.addcmul(t, t, t, value=s),
    "addcdiv": lambda m, t, s: m.addcdiv(t, t, t, value=s),
    "lerp": lambda m, t, s: m.lerp(t, t * 2, s),
    "nan_to_num": lambda m, t, s: m.nan_to_num(t, nan=s, posinf=s),
}
_HALF_OPMATH = {"mul", "addcmul", "lerp", "fill_", "full_like", "pow"}


@pytest.mark.parametrize("op", list(SCALAR_OPS))
def test_python_scalar_operands(backend, op):
    fn = SCALAR_OPS[op]
    for dtype in _dtypes():
        for scalar in SCALARS:
            if not _compared(dtype, scalar, op):
                continue
            for shape in "v0":
                case = f"{op} {dtype} {shape} {scalar!r}"
                same_as_torch(case, _on_scalar, fn, dtype, shape, scalar)
    for scalar in (300, -1, 2.5):  # empty tensors: the checks still run
        same_as_torch(f"{op} empty {scalar}", _on_scalar, fn, "uint8", "e", scalar)


def _on_scalar(m: Any, fn: Callable, dtype: str, shape: str, scalar: Any) -> Any:
    return fn(m, _data(m, dtype, shape), scalar)


PAIR_OPS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add": lambda m, a, b: a + b,
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a**b,
    "lt": lambda m, a, b: a < b,
    "xor": lambda m, a, b: a ^ b,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "where": lambda m, a, b: m.where(_mask(m, a), a, b),
    "sub": lambda m, a, b: a - b,
}


@pytest.mark.parametrize("op", list(PAIR_OPS))
def test_tensor_pairs(backend, op):
    fn = PAIR_OPS[op]
    for a in _dtypes():
        for b in _dtypes():
            for shape in "v0":
                same_as_torch(f"{op} {a} {b} {shape}", _on_pair, fn, a, b, shape)


def _on_pair(m: Any, fn: Callable, a: str, b: str, shape: str) -> Any:
    return fn(m, _data(m, a), _data(m, b, shape))


UNARY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "sum": lambda m, t: t.sum(),
    "prod": lambda m, t: t.prod(),
    "cumsum": lambda m, t: t.cumsum(0),
    "mean": lambda m, t: t.mean(),
    "any": lambda m, t: t.any(),
    "all": lambda m, t: t.all(),
    "argmax": lambda m, t: t.argmax(),
    "amax": lambda m, t: t.amax(),
    "min_dim": lambda m, t: t.min(0),
    "norm": lambda m, t: t.norm(),
    "abs": lambda m, t: t.abs(),
    "neg": lambda m, t: -t,
    "floor": lambda m, t: t.floor(),
    "round": lambda m, t: t.round(),
    "round_decimals": lambda m, t: t.round(decimals=1),
    "relu": lambda m, t: m.relu(t),
    "sqrt": lambda m, t: t.sqrt(),
    "invert": lambda m, t: ~t,
    "shift_past_width": lambda m, t: t << 9,
    "clamp_min_above_max": lambda m, t: t.clamp(min=3, max=1),
}


@pytest.mark.parametrize("op", list(UNARY_OPS))
def test_unary_and_reductions(backend, op):
    fn = UNARY_OPS[op]
    for dtype in _dtypes():
        for shape in "v0e":
            if op == "min_dim" and shape == "0":
                continue
            same_as_torch(f"{op} {dtype} {shape}", _on_tensor, fn, dtype, shape)


def _on_tensor(m: Any, fn: Callable, dtype: str, shape: str) -> Any:
    return fn(m, _data(m, dtype, shape))


# -- the cases the audit started from, with PyTorch's messages -------------------------------


def test_where_refuses_a_number_that_does_not_fit(backend):
    for m in (tw, torch):
        with pytest.raises(RuntimeError, match="overflow|converted"):
            m.where(m.tensor([True, False]), m.tensor([1, 2], dtype=m.uint8), 300)
    same_as_torch(
        "wrap", lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2], dtype=m.uint8), -1)
    )


def test_integer_powers_with_negative_exponent_tensors(backend):
    base = np.array([2, 1, -1, -1, 3, 0, -2], dtype=np.int64)
    exponent = np.array([-1, -5, -1, -2, 2, 3, -3], dtype=np.int64)
    for dtype in ("int8", "int32", "int64"):
        same_as_torch(
            dtype, lambda m, d: m.tensor(base, dtype=getattr(m, d)) ** m.tensor(exponent), dtype
        )


def test_trunc_division_is_exact_for_large_int64(backend):
    big = np.array([2**62 + 1, -(2**62) - 3, 7, -7, 2**53 + 1], dtype=np.int64)
    for divisor in (3, -3, [3, -3, 2, 2, -5]):
        same_as_torch(f"trunc {divisor}", _trunc_divide, big, divisor)


def _trunc_divide(m: Any, big: np.ndarray, divisor: Any) -> Any:
    divisor = m.tensor(divisor) if isinstance(divisor, list) else divisor
    return m.div(m.tensor(big), divisor, rounding_mode="trunc")


def test_integer_division_by_a_number_that_wraps_to_zero(backend):
    for op in ("floor_divide", "remainder"):
        same_as_torch(op, lambda m, o: getattr(m, o)(_data(m, "uint8"), 256), op)


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "bool", "uint8", "int64"])
def test_class_targets_must_be_int64_or_uint8(backend, fn, dtype):
    logp = np.log(np.full((3, 3), 1 / 3))
    same_as_torch(
        f"{fn} {dtype}",
        lambda m: getattr(m.nn.functional, fn)(
            m.tensor(logp), m.tensor([0, 1, 2], dtype=getattr(m, dtype))
        ),
    )


DIM_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "permute": lambda x, d: x.permute(d, 0, 2),
    "permute_tuple": lambda x, d: x.permute((d, 0, 2)),
    "sum": lambda x, d: x.sum(d),
    "sum_tuple": lambda x, d: x.sum((d,)),
    "mean": lambda x, d: x.mean(d),
    "amax": lambda x, d: x.amax(d),
    "cumsum": lambda x, d: x.cumsum(d),
    "any": lambda x, d: x.any(d),
    "transpose": lambda x, d: x.transpose(d, 0),
    "flatten": lambda x, d: x.flatten(d),
    "squeeze": lambda x, d: x.squeeze(d),
    "unsqueeze": lambda x, d: x.unsqueeze(d),
    "flip": lambda x, d: x.flip(d),
    "roll": lambda x, d: x.roll(1, d),
    "movedim": lambda x, d: x.movedim(d, 0),
    "unflatten": lambda x, d: x.unflatten(d, (3, 1)),
    "reshape": lambda x, d: x.reshape(d, 24),
    "view": lambda x, d: x.view(d, 24),
    "repeat": lambda x, d: x.repeat(d, 1, 1),
    "expand": lambda x, d: x[:, :1].expand(2, d, 4),
    "tril": lambda x, d: x.tril(d),
    "std": lambda x, d: x.std(d),
}


@pytest.mark.parametrize("op", list(DIM_OPS))
def test_dims_take_ints_only(backend, op):
    """A float or bool dim is PyTorch's TypeError; a NumPy int or a 0-d integer tensor is an
    int (std(True) is the ``unbiased`` overload, expand reads True as 1)."""
    fn = DIM_OPS[op]
    for dim in (1.0, 1.5, True, np.int64(1), "tensor"):
        same_as_torch(f"{op} {dim!r}", _on_dim, fn, dim)


def _on_dim(m: Any, fn: Callable, dim: Any) -> Any:
    return fn(m.arange(24.0).reshape(2, 3, 4), m.tensor(1) if isinstance(dim, str) else dim)


@pytest.mark.parametrize("fn", ["cat", "stack"])
def test_cat_and_stack_dims(backend, fn):
    for dim in (1.0, True, np.int64(1)):
        same_as_torch(
            f"{fn} {dim!r}", lambda m, d: getattr(m, fn)([m.zeros(2, 3), m.ones(2, 3)], d), dim
        )


def test_half_precision_mean_sums_in_float32(backend):
    """PyTorch sums float16 in float32 for a mean: the mean of 60000s is 60000, not inf."""
    for dtype in ("float16", "bfloat16"):
        if supports(dtype):
            for dim in (None, 1):
                same_as_torch(
                    f"mean {dtype} {dim}",
                    lambda m, d, k: m.full((2, 3), 60000.0, dtype=getattr(m, d)).mean(k),
                    dtype,
                    dim,
                )


def test_half_precision_products_with_numbers_they_cannot_hold(backend):
    """x * 1e5 and x / 7e4 in float16 compute in float32 and round once, as PyTorch's CPU
    kernels do: 1e5 is not inf first, so 1e-3 * 1e5 is 100."""
    values = [1e-3, 0.7, -6000.0, 1.0, 3.0]
    for dtype in ("float16", "bfloat16"):
        if not supports(dtype):
            continue
        for number in (1e5, 70000.0, 0.1, 1 / 3):
            for op in ("mul", "div", "rmul", "rdiv"):
                same_as_torch(f"{dtype} {op} {number}", _half_op, values, dtype, op, number)


def _half_op(m: Any, values: list, dtype: str, op: str, number: float) -> Any:
    x = m.tensor(values, dtype=getattr(m, dtype))
    if op.startswith("r"):
        return number * x if op == "rmul" else number / x
    return x * number if op == "mul" else x / number


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "any", "std", "logsumexp"])
def test_dims_of_a_0d_tensor(backend, op):
    """A 0-d tensor takes dim 0 and -1, once each; 1 is out of range."""
    for dim in (0, -1, 1, (0,), (0, -1)):
        same_as_torch(f"{op} {dim}", lambda m, d: getattr(m.tensor(3.0), op)(d), dim)


@pytest.mark.parametrize(
    "op",
    [
        lambda m, t: t.softmax(1.0),
        lambda m, t: t.log_softmax(0.5),
        lambda m, t: t.select(1.0, 0),
        lambda m, t: t.size(1.0),
        lambda m, t: t.gather(1.0, m.zeros(2, 1, dtype=m.int64)),
        lambda m, t: t.index_select(True, m.zeros(1, dtype=m.int64)),
        lambda m, t: t.cumsum(0.0),
    ],
    ids=["softmax", "log_softmax", "select", "size", "gather", "index_select", "cumsum"],
)
def test_every_dim_refuses_floats_and_bools_like_torch(backend, op):
    """Every function that normalises a dim (through ``_axis``) refuses a float or bool."""
    for m in (torch, tw):
        with pytest.raises(TypeError):
            op(m, m.zeros(2, 3))


def test_arange_of_tensor_and_numpy_bounds_like_torch(backend):
    for bounds in [(3,), (1, 7), (0, 5, 2), (2.5,), (1, 4, 0.5)]:
        for wrap in (lambda m, v: m.tensor(v), lambda m, v: np.asarray(v)[()]):
            ours = tw.arange(*(wrap(tw, v) for v in bounds))
            theirs = torch.arange(*(wrap(torch, v) for v in bounds))
            assert_like_torch(ours, theirs)


def test_masked_fill_with_a_0d_tensor_value_checks_its_range_like_torch(backend):
    for dtype, value in [("uint8", 300), ("int8", -200), ("bool", 2)]:
        results = []
        for m in (torch, tw):
            x = m.zeros(3, dtype=getattr(m, dtype))
            mask = m.tensor([True, False, True])
            try:
                results.append(x.masked_fill(mask, m.tensor(value)))
            except Exception as error:
                results.append(builtin_class(error))
        if isinstance(results[0], type):
            assert results[1] is results[0], (dtype, value)
        else:
            assert_like_torch(results[1], results[0])


def test_fmod_with_every_dtype_and_scalar_kind_like_torch(backend):
    """fmod of bools, uint8 with -1 (wraps to 255 as the result dtype), complex (refused),
    integers exactly and floats as C's fmod."""
    for dtype in filter(supports, DTYPES):
        for scalar in [True, 3, -3, 2.5, -0.5, 300, -1, math.inf, 1 + 2j]:
            results = []
            for m in (torch, tw):
                try:
                    results.append(m.fmod(_data(m, dtype), scalar))
                except Exception as error:
                    results.append(builtin_class(error))
            if isinstance(results[0], type):
                assert results[1] is results[0], (dtype, scalar)
            else:
                assert_like_torch(results[1], results[0])


@pytest.mark.parametrize(
    "op",
    [
        lambda m: m.zeros(3, dtype=m.uint8).scatter(0, m.tensor([0, 2]), 300),
        lambda m: m.zeros(3, dtype=m.uint8).scatter(0, m.tensor([0, 2]), -1),
        lambda m: m.zeros(3, dtype=m.int64).scatter(0, m.tensor([0, 2]), float("nan")),
        lambda m: m.zeros(3, dtype=m.int64).scatter(0, m.tensor([1]), 2.7),
        lambda m: m.softmax(m.ones(2, dtype=m.int64), 0),
        lambda m: m.ones(2, dtype=m.int64).log_softmax(0),
        lambda m: m.softmax(m.ones(2, dtype=m.int64), 0, dtype=m.float64),
        lambda m: m.tensor([True, False]).topk(1),
        lambda m: m.rsub(m.ones(2), 3, alpha=2),
        lambda m: m.rsub(m.arange(3), m.tensor([5, 6, 7])),
        lambda m: m.zeros(2, dtype=m.float16).add_(m.ones(2, dtype=m.float16), alpha=2**40),
        lambda m: m.zeros(2, dtype=m.float32).sub_(m.ones(2), alpha=0.25),
    ],
    ids=[
        "scatter-300-uint8",
        "scatter-minus1-uint8",
        "scatter-nan-int",
        "scatter-float-int",
        "softmax-int",
        "log_softmax-int",
        "softmax-int-dtype",
        "topk-bool",
        "rsub-number",
        "rsub-tensor",
        "add_-alpha-overflow",
        "sub_-alpha",
    ],
)
def test_values_and_refusals_of_scatter_softmax_topk_rsub_like_torch(backend, op):
    results = []
    for m in (torch, tw):
        try:
            results.append(op(m))
        except Exception as error:
            results.append(builtin_class(error))
    if isinstance(results[0], type):
        assert results[1] is results[0]
    else:
        assert_like_torch(results[1], results[0])
