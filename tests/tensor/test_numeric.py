"""The numerics in ``tensorweaver.ops.numeric`` against PyTorch: closeness tests, one-sided
clamps, ``logaddexp``/``logaddexp2``, ``hypot``, ``fmod``, ``frac``, NaN-ignoring and paired
reductions, running products/extrema/log-sum-exp and scatter/index reductions, over dtypes,
broadcasting, NaN/inf and empty inputs, with their gradients and errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from tensor_reference import (
    grads_like_torch,
    like_torch,
    make,
    raises_like_torch,
    signed,
    uniform,
)

nan, inf = float("nan"), float("inf")
#: Few distinct values: ties for the running extrema and the scatter extrema.
TIES = np.random.default_rng(3).integers(-2, 3, (3, 6)).astype(np.float64)
#: Scatter targets along dim 1 of a (3, 4) input, for a (2, 5) source.
SCATTER_INDEX = np.array([[0, 1, 0, 3, 0], [2, 2, 2, 0, 3]])


# -- elementwise ------------------------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_and_allclose_like_torch(backend: str, equal_nan: bool) -> None:
    a = np.array([1.0, 1e-9, nan, inf, -inf, 1e10, 2.0])
    b = np.array([1.0 + 1e-6, 0.0, nan, inf, inf, 1e10 + 1, 2.1])
    like_torch(lambda m, x, y: m.isclose(x, y, equal_nan=equal_nan), a, b)
    like_torch(lambda m, x, y: x.isclose(y, rtol=0.1, atol=0.0), a, b[None].repeat(2, 0))
    like_torch(lambda m, x, y: m.allclose(x, y, equal_nan=equal_nan), a[2:4], b[2:4])
    like_torch(lambda m, x, y: m.allclose(x, y), a, b)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "float32"])
def test_isclose_of_other_dtypes_like_torch(backend: str, dtype: str) -> None:
    a, b = np.array([0, 1, 5, 200]), np.array([0, 0, 5, 199])
    like_torch(lambda m, x, y: m.isclose(x, y, rtol=0.0, atol=1.0), a, b, dtype=dtype)


def test_isclose_rejects_mixed_dtypes_and_negative_tolerances_like_torch(backend: str) -> None:
    raises_like_torch(
        lambda m, x: m.isclose(x, x.double()), np.array([1, 2]), match=["int64", "float64"]
    )
    raises_like_torch(lambda m, x: m.isclose(x, x, rtol=-1), np.array([1.0]), match=["rtol"])
    raises_like_torch(lambda m, x: m.allclose(x, x, atol=-1), np.array([1.0]), match=["atol"])


@pytest.mark.cunumeric
def test_clamp_min_and_max_like_torch(backend: str) -> None:
    x = np.array([[-2.0, 0.5, nan], [3.0, -inf, 1.0]])
    like_torch(lambda m, t: m.clamp_min(t, 0.5), x)
    like_torch(lambda m, t: t.clamp_max(0), x)
    like_torch(lambda m, t: m.clamp_min(t, 1), np.array([0, 3], dtype=np.int64))
    like_torch(lambda m, t, lo: m.clamp_max(t, lo), x, np.array([0.0, 0.25, 2.0]))
    grads_like_torch(lambda m, t: m.clamp_min(t, 0.5) * m.clamp_max(t, 1.0), x[:, :2] + 0.0)


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_is_stable_like_torch(backend: str, name: str) -> None:
    a = np.array([0.0, 1e4, -1e4, 800.0, -inf, -inf, inf, nan, 3.0])
    b = np.array([0.0, 1e4 - 1, 5.0, -800.0, -inf, 2.0, inf, 1.0, -inf])
    like_torch(lambda m, x, y: getattr(m, name)(x, y), a, b)
    like_torch(lambda m, x, y: getattr(m, name)(x, y), a.astype(np.float32), b[:, None])
    like_torch(lambda m, x, y: getattr(x, name)(y), uniform((0, 3)), uniform((3,)))


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_gradients_like_torch(backend: str, name: str) -> None:
    a, b = uniform((3, 4), -5, 5), uniform((4,), -5, 5, seed=1)
    grads_like_torch(lambda m, x, y: getattr(m, name)(x, y), a, b)
    grads_like_torch(lambda m, x: getattr(m, name)(x, x), a)  # ties: half each
    gradcheck(lambda x, y: getattr(tw, name)(x, y), a, b)


def test_hypot_does_not_overflow_like_torch(backend: str) -> None:
    a = np.array([3.0, 1e300, -1e-300, 0.0, inf, nan, -inf, 1e200])
    b = np.array([4.0, 1e300, 1e-300, 0.0, nan, 2.0, 1.0, -1e200])
    like_torch(lambda m, x, y: m.hypot(x, y), a, b)
    like_torch(lambda m, x, y: x.hypot(y), np.array([3e30, 1e-30], dtype=np.float32), b[:2, None])


def test_hypot_gradients_like_torch(backend: str) -> None:
    a, b = signed((3, 4)), signed((3, 1), seed=1)
    grads_like_torch(lambda m, x, y: m.hypot(x, y), a, b)
    grads_like_torch(lambda m, x, y: m.hypot(x, y), np.zeros(2), np.array([0.0, 2.0]))  # origin
    gradcheck(lambda x, y: tw.hypot(x, y), a, b)


def test_float_only_ops_reject_integers_like_torch(backend: str) -> None:
    ints = np.array([1, 2])
    raises_like_torch(lambda m, x: m.logaddexp(x, x), ints, match=["not implemented"])
    raises_like_torch(lambda m, x: m.logaddexp2(x, x), ints, match=["not implemented"])
    raises_like_torch(lambda m, x: m.hypot(x, x), ints, match=["not implemented"])
    raises_like_torch(lambda m, x: m.frac(x), ints, match=["not implemented"])
    raises_like_torch(lambda m, x: m.logcumsumexp(x, 0), ints, match=["not implemented"])
    raises_like_torch(lambda m, x: m.logaddexp(x, 2), np.array([1.0]), match=["must be tensor"])


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_fmod_takes_the_dividends_sign_like_torch(backend: str, dtype: str) -> None:
    a = np.arange(-7, 8).reshape(3, 5)
    b = np.array([3, -3, 2, -4, 5])
    like_torch(lambda m, x, y: m.fmod(x, y), a, b, dtype=dtype)
    like_torch(lambda m, x: x.fmod(-3), a, dtype=dtype)
    like_torch(lambda m, x: m.fmod(x, 2.5), a, dtype=dtype)


def test_fmod_of_floats_is_exact_like_torch(backend: str) -> None:
    a = np.array([-1e-20, 1e20, -5.5, 0.0, inf, 3.0, nan, 7.25])
    b = np.array([1.0, 3.0, 2.0, 1.0, 2.0, 0.0, 1.0, inf])
    like_torch(lambda m, x, y: m.fmod(x, y), a, b)
    grads_like_torch(lambda m, x, y: m.fmod(x, y), signed((3, 4)) * 5, signed((4,), seed=1))


def test_fmod_rejects_integer_zero_divisors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, x: m.fmod(x, 0), np.array([1, 2]), match=["ZeroDivision"])
    raises_like_torch(lambda m, x: x.fmod(x), np.array([True]), match=["not implemented"])


@pytest.mark.cunumeric
def test_frac_like_torch(backend: str) -> None:
    x = np.array([-2.5, 2.5, 0.0, -0.25, inf, nan, 1e20])
    like_torch(lambda m, t: m.frac(t), x)
    like_torch(lambda m, t: t.frac(), x.astype(np.float32))
    grads_like_torch(lambda m, t: m.frac(t), uniform((3, 4), -5, 5))


# -- reductions -------------------------------------------------------------------------------

NAN_MATRIX = np.array([[1.0, nan, 3.0, -2.0], [nan, nan, nan, nan], [0.5, 2.0, nan, 4.0]])


@pytest.mark.cunumeric
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_nansum_and_nanmean_like_torch(backend: str, dim: object, keepdim: bool) -> None:
    like_torch(lambda m, t: m.nansum(t, dim, keepdim), NAN_MATRIX)
    like_torch(lambda m, t: t.nanmean(dim, keepdim), NAN_MATRIX)
    like_torch(lambda m, t: m.nanmean(t, dim, keepdim), NAN_MATRIX.astype(np.float32))


def test_nansum_of_integers_empty_and_dtype_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.nansum(t), np.array([[1, 2], [3, 4]], dtype=np.int32))
    like_torch(lambda m, t: m.nansum(t, 0), np.array([True, True, False]))
    like_torch(lambda m, t: m.nansum(t, dtype=m.float64), NAN_MATRIX.astype(np.float32))
    like_torch(lambda m, t: m.nansum(t, 1), np.zeros((2, 0)))
    like_torch(lambda m, t: m.nanmean(t, 1), np.zeros((2, 0)))
    raises_like_torch(lambda m, t: m.nanmean(t), np.array([1, 2]), match=["floating point"])


def test_nansum_and_nanmean_gradients_like_torch(backend: str) -> None:
    grads_like_torch(lambda m, t: m.nansum(t, 1), NAN_MATRIX)
    grads_like_torch(lambda m, t: m.nanmean(t, 0, keepdim=True), NAN_MATRIX)
    gradcheck(lambda t: tw.nanmean(t, 1), uniform((3, 4)))


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize(("dim", "correction"), [(None, 1), (1, 0), ((0, 2), 2)])
def test_std_mean_and_var_mean_like_torch(backend: str, name: str, dim, correction) -> None:
    x = uniform((3, 4, 5))
    like_torch(lambda m, t: getattr(m, name)(t, dim, correction=correction), x)
    like_torch(lambda m, t: getattr(m, name)(t, dim, keepdim=True), x)
    grads_like_torch(lambda m, t: getattr(m, name)(t, dim)[0] * getattr(m, name)(t, dim)[1], x)


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool"])
@pytest.mark.parametrize(("dim", "keepdim"), [(None, False), (None, True), (0, False), (-1, True)])
def test_aminmax_like_torch(backend: str, dtype: str, dim, keepdim) -> None:
    x = TIES > 0 if dtype == "bool" else np.abs(TIES) if dtype == "uint8" else TIES
    ours = like_torch(lambda m, t: tuple(m.aminmax(t, dim=dim, keepdim=keepdim)), x, dtype=dtype)
    named = tw.aminmax(make(tw, x, dtype), dim=dim, keepdim=keepdim)
    assert named.min.tolist() == ours[0].tolist() and named.max.tolist() == ours[1].tolist()


def test_aminmax_of_nan_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: tuple(t.aminmax(dim=1)), NAN_MATRIX)
    like_torch(lambda m, t: tuple(m.aminmax(t)), np.array(2.5))
    like_torch(lambda m, t: tuple(m.aminmax(t, dim=0)), np.zeros((2, 0)))
    raises_like_torch(lambda m, t: m.aminmax(t), np.zeros((0, 3)), match=["empty"])
    grads_like_torch(lambda m, t: m.aminmax(t, dim=0).max - m.aminmax(t, dim=0).min, TIES)


# -- scans ------------------------------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_is_exact_like_torch(backend: str, dtype: str, dim: int) -> None:
    x = TIES > 0 if dtype == "bool" else TIES  # zeros and negatives
    like_torch(lambda m, t: m.cumprod(t, dim), x, dtype=dtype)


def test_cumprod_of_long_0d_empty_and_dtype_like_torch(backend: str) -> None:
    like_torch(lambda m, t: t.cumprod(0), uniform((37,), 0.5, 1.5))  # 6 doubling steps
    like_torch(lambda m, t: m.cumprod(t, 0), np.array(3))
    like_torch(lambda m, t: m.cumprod(t, 1), np.zeros((2, 0)))
    like_torch(lambda m, t: m.cumprod(t, 1, dtype=m.float64), TIES.astype(np.int32))
    like_torch(lambda m, t: m.cumprod(t, 0), np.array([2.0, inf, 0.0, nan, 1.0]))


def test_cumprod_gradients_like_torch(backend: str) -> None:
    x = signed((3, 7))
    x[0, 2] = x[1, 6] = 0.0  # one zero per slice, where PyTorch's rule is exact
    grads_like_torch(lambda m, t: m.cumprod(t, 1), x)
    grads_like_torch(lambda m, t: m.cumprod(t, 0), x)
    gradcheck(lambda t: tw.cumprod(t, 1), x)
    gradcheck(lambda t: tw.cumprod(t, 1), np.array([[2.0, 0.0, 3.0, 0.0, -1.0]]))  # two zeros


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_and_cummin_take_the_last_tie_like_torch(
    backend: str, name: str, dtype: str, dim: int
) -> None:
    x = TIES > 0 if dtype == "bool" else np.abs(TIES) if dtype == "uint8" else TIES
    like_torch(lambda m, t: getattr(m, name)(t, dim), x, dtype=dtype)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_and_cummin_propagate_nan_like_torch(backend: str, name: str) -> None:
    x = np.array([[1.0, 3.0, nan, 3.0, nan, 5.0, -inf], [nan, 0.0, 0.0, -1.0, inf, nan, 2.0]])
    like_torch(lambda m, t: getattr(t, name)(1), x)
    like_torch(lambda m, t: getattr(m, name)(t, 0), np.array(1.5))
    like_torch(lambda m, t: getattr(m, name)(t, 0), np.zeros((0, 2)))
    grads_like_torch(lambda m, t: getattr(m, name)(t, 1).values, TIES)
    raises_like_torch(lambda m, t: getattr(m, name)(t, 2), TIES, match=["out of range"])


@pytest.mark.cunumeric
def test_logcumsumexp_is_stable_like_torch(backend: str) -> None:
    x = np.array([[-1000.0, 0.0, 1000.0, 1000.0, -inf, 2.0], [-inf, -inf, 3.0, nan, 1.0, 0.0]])
    like_torch(lambda m, t: m.logcumsumexp(t, 1), x)
    like_torch(lambda m, t: t.logcumsumexp(0), uniform((5, 3), -50, 50).astype(np.float32))
    like_torch(lambda m, t: m.logcumsumexp(t, 0), np.array(1.5))
    like_torch(lambda m, t: m.logcumsumexp(t, 0), np.zeros((0, 2)))


def test_logcumsumexp_gradients_like_torch(backend: str) -> None:
    x = uniform((3, 6), -5, 5)
    grads_like_torch(lambda m, t: m.logcumsumexp(t, 1), x)
    gradcheck(lambda t: tw.logcumsumexp(t, 0), x)


# -- scatter and index reductions -------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_scatter_reduce_like_torch(backend: str, reduce: str, include_self: bool, dtype) -> None:
    x, src = np.round(uniform((3, 4), -3, 3)), np.round(uniform((2, 6), -3, 3, seed=1))
    like_torch(
        lambda m, t, s: t.scatter_reduce(
            1, m.tensor(SCATTER_INDEX), s, reduce, include_self=include_self
        ),
        x,
        src,
        dtype=dtype,
    )
    index = np.array([[2, 0, 2, 1], [2, 2, 0, 1]])
    like_torch(
        lambda m, t, s: m.scatter_reduce(
            t, 0, m.tensor(index), s, reduce, include_self=include_self
        ),
        x,
        src[:, :4],
        dtype=dtype,
    )


@pytest.mark.cunumeric
@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
def test_scatter_reduce_with_nan_and_empty_like_torch(backend: str, reduce: str) -> None:
    x = np.array([1.0, nan, 2.0, -inf])
    src = np.array([nan, 3.0, 0.0, inf, -1.0])
    like_torch(
        lambda m, t, i, s: m.scatter_reduce(t, 0, i, s, reduce), x, np.array([0, 2, 2, 3, 3]), src
    )
    like_torch(
        lambda m, t, i, s: m.scatter_reduce(t, 0, i.long(), s, reduce, include_self=False),
        x,
        np.zeros(0),
        src[:0],
    )


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients_like_torch(backend: str, reduce: str, include_self) -> None:
    # TIES-like values: the amax/amin gradient is shared among tied extrema, self included.
    x, src = np.round(uniform((3, 4), -2, 2)), np.round(uniform((2, 5), -2, 2, seed=1))
    grads_like_torch(
        lambda m, t, s: m.scatter_reduce(
            t, 1, m.tensor(SCATTER_INDEX), s, reduce, include_self=include_self
        ),
        x,
        src,
    )
    index = tw.tensor(SCATTER_INDEX)
    gradcheck(
        lambda t, s: t.scatter_reduce(1, index, s, reduce, include_self=include_self),
        signed((3, 4)),
        signed((2, 5), seed=1) * np.arange(1, 11).reshape(2, 5),  # distinct: no ties
    )


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")  # PyTorch's, for the reference
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_like_torch(backend: str, reduce: str, include_self: bool) -> None:
    x, source = np.round(uniform((4, 3), -3, 3)), np.round(uniform((5, 3), -3, 3, seed=1))
    index = np.array([0, 2, 0, 3, 0])
    like_torch(
        lambda m, t, i, s: t.index_reduce(0, i, s, reduce, include_self=include_self),
        x,
        index,
        source,
    )
    like_torch(
        lambda m, t, i, s: m.index_reduce(t, 1, i, s, reduce, include_self=include_self),
        x.astype(np.int64),
        np.array([2, 2]),
        np.round(uniform((4, 2), -3, 3, seed=2)).astype(np.int64),
    )
    grads_like_torch(
        lambda m, t, s: t.index_reduce(0, m.tensor(index), s, reduce, include_self=include_self),
        x,
        source,
    )


def test_scatter_and_index_reduce_reject_unknown_reductions_like_torch(backend: str) -> None:
    x, index = np.zeros(3), np.array([0, 1])
    raises_like_torch(
        lambda m, t, i: t.scatter_reduce(0, i, t[:2], "add"), x, index, match=["amax", "add"]
    )
    # PyTorch's scatter_reduce takes "max" and "min" for "amax" and "amin".
    like_torch(lambda m, t, i: t.scatter_reduce(0, i, t[1:], "max"), uniform((3,)), index)
    like_torch(lambda m, t, i: t.scatter_reduce(0, i, t[1:], "min"), uniform((3,)), index)
    raises_like_torch(
        lambda m, t, i: m.index_reduce(t, 0, i, t[:2], "sum"), x, index, match=["prod", "sum"]
    )
    raises_like_torch(
        lambda m, t, i: t.scatter_reduce(0, i, t[:2].float(), "sum"), x, index, match=["dtype"]
    )
