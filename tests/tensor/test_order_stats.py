"""Order statistics and counting against PyTorch: ``median``, ``nanmedian``, ``kthvalue``,
``quantile``, ``nanquantile``, ``mode``, ``unique``, ``bincount``, ``histc``, ``searchsorted``,
``bucketize`` over dims, keepdim, ties, NaN, dtypes, 0-d and empty inputs; their gradients and
their errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

nan = float("nan")
#: Distinct values (no ties), so indices are unambiguous.
DISTINCT = np.random.default_rng(1).permutation(60).reshape(3, 4, 5) / 7.0
#: Few distinct values: many ties.
TIES = np.random.default_rng(3).integers(-2, 3, (4, 6))
WITH_NAN = np.array([[3.0, nan, 1.0, nan, 2.0], [1.5, 0.5, -2.0, 4.0, 0.0], [nan] * 5])


def assert_tied_indices_point_at_values(x: np.ndarray, result, dim: int) -> None:
    """Where PyTorch's tie-break is its selection algorithm's, an index need only point at an
    element equal to the value."""
    picked = np.take_along_axis(x, np.expand_dims(result.indices.numpy(), dim), dim)
    np.testing.assert_array_equal(np.squeeze(picked, dim), result.values.numpy())


# -- median, nanmedian, kthvalue --------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("fn", ["median", "nanmedian"])
@pytest.mark.parametrize(("dim", "keepdim"), [(0, False), (1, True), (-1, False)])
def test_median_along_dim_like_torch(backend: str, fn: str, dim: int, keepdim: bool) -> None:
    like_torch(lambda m, t: getattr(m, fn)(t, dim, keepdim), DISTINCT)
    like_torch(
        lambda m, t: getattr(t, fn)(dim=dim, keepdim=keepdim), DISTINCT[:, :3], dtype="int64"
    )


@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_median_of_nan_slices_like_torch(backend: str, fn: str) -> None:
    # median: NaN (at the first NaN) wherever a row has one; nanmedian: NaN only if all are,
    # at an index PyTorch's selection leaves to chance: compare the values there.
    like_torch(lambda m, t: getattr(m, fn)(t, 1), WITH_NAN[:2])
    like_torch(lambda m, t: getattr(m, fn)(t, 1).values, WITH_NAN)
    like_torch(lambda m, t: getattr(m, fn)(t), WITH_NAN)
    like_torch(lambda m, t: getattr(m, fn)(t), WITH_NAN[1:2], dtype="float32")


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_median_of_ties_takes_the_lower_median_like_torch(backend: str, dtype: str) -> None:
    like_torch(lambda m, t: m.median(t), TIES, dtype=dtype)
    ours = tw.median(tw.tensor(TIES, dtype=getattr(tw, dtype)), 1)
    like_torch(lambda m, t: m.median(t, 1).values, TIES, dtype=dtype)
    assert_tied_indices_point_at_values(TIES, ours, 1)


def test_median_of_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.median(t), np.array(2.5))
    like_torch(lambda m, t: m.median(t, 0, keepdim=True), np.array(2.5))
    like_torch(lambda m, t: m.median(t), np.zeros(0))
    like_torch(lambda m, t: m.nanmedian(t, 1), np.zeros((0, 3)))
    raises_like_torch(lambda m, t: m.median(t, 0), np.zeros((0, 3)), match=["non-zero size"])
    raises_like_torch(lambda m, t: m.median(t), np.array([True]))


@pytest.mark.cunumeric
@pytest.mark.parametrize(("k", "dim", "keepdim"), [(1, 0, False), (4, 1, True), (5, -1, False)])
def test_kthvalue_like_torch(backend: str, k: int, dim: int, keepdim: bool) -> None:
    like_torch(lambda m, t: m.kthvalue(t, k, dim, keepdim), DISTINCT[:, :3] if k == 1 else DISTINCT)


def test_kthvalue_of_nan_ties_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: t.kthvalue(4), WITH_NAN[:2])  # NaN is the largest
    like_torch(lambda m, t: m.kthvalue(t, 3, 1).values, TIES, dtype="int64")
    assert_tied_indices_point_at_values(TIES, tw.tensor(TIES).kthvalue(3, 1), 1)
    like_torch(lambda m, t: m.kthvalue(t, 1), np.array(4.0))
    like_torch(lambda m, t: m.kthvalue(t, 2, 1), np.zeros((0, 3)))


@pytest.mark.parametrize("k", [0, 6])
def test_kthvalue_rejects_k_out_of_range_like_torch(backend: str, k: int) -> None:
    raises_like_torch(lambda m, t: m.kthvalue(t, k), uniform((2, 5)), match=["k", "out of range"])


def test_kthvalue_rejects_empty_dim_and_bool_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, t: m.kthvalue(t, 1, 0), np.zeros((0, 3)), match=["non-zero size"])
    raises_like_torch(lambda m, t: m.kthvalue(t, 1), np.array([True, False]))


def test_selected_values_have_torch_gradients(backend: str) -> None:
    grads_like_torch(lambda m, t: m.median(t, 1).values, DISTINCT)
    grads_like_torch(lambda m, t: m.median(t) * 2, DISTINCT)
    grads_like_torch(lambda m, t: m.nanmedian(t, 0, keepdim=True).values, DISTINCT)
    grads_like_torch(lambda m, t: t.kthvalue(3, dim=0).values, DISTINCT)
    gradcheck(lambda t: tw.median(t, -1).values.sin(), DISTINCT)
    gradcheck(lambda t: tw.kthvalue(t, 2, 1).values.exp(), DISTINCT)


# -- quantile, nanquantile --------------------------------------------------------------------

INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]
QS = [0.0, 0.25, 0.3, 0.5, 5 / 6, 1.0]


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize(("dim", "keepdim"), [(None, False), (None, True), (0, False), (-1, True)])
def test_quantile_like_torch(backend: str, fn: str, interpolation: str, dim, keepdim: bool) -> None:
    x = uniform((3, 7), seed=5)

    def q_tensor(m, t):
        q = m.tensor(QS, dtype=m.float64)
        return getattr(m, fn)(t, q, dim, keepdim, interpolation=interpolation)

    like_torch(q_tensor, x)
    like_torch(lambda m, t: getattr(t, fn)(0.3, dim, keepdim, interpolation=interpolation), x)


@pytest.mark.cunumeric
def test_quantile_of_float32_and_0d_q_like_torch(backend: str) -> None:
    x = uniform((4, 6), seed=6)
    like_torch(lambda m, t: m.quantile(t, m.tensor(0.7), 1), x, dtype="float32")
    like_torch(lambda m, t: m.quantile(t, m.tensor([0.5, 0.1]), 0, True), x, dtype="float32")


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "nearest"])
def test_quantile_of_nan_like_torch(backend: str, fn: str, interpolation: str) -> None:
    def q_tensor(m, t):
        q = m.tensor([0.2, 0.5, 0.9], dtype=m.float64)
        return getattr(m, fn)(t, q, 1, interpolation=interpolation)

    like_torch(q_tensor, WITH_NAN)
    like_torch(lambda m, t: getattr(m, fn)(t, 0.4, interpolation=interpolation), WITH_NAN[:2])


def test_quantile_of_0d_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.quantile(t, 0.5), np.array(2.0))
    like_torch(lambda m, t: m.quantile(t, 0.5, 0, keepdim=True), np.array(2.0))
    like_torch(lambda m, t: m.nanquantile(t, m.tensor([0.5], dtype=m.float64), 0), np.array(2.0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, t: m.quantile(t, 1.5), "q must be in the range"),
        (lambda m, t: m.nanquantile(t, nan), "q must be in the range"),
        (lambda m, t: m.quantile(t, m.tensor([0.5, -0.1], dtype=m.float64)), "range"),
        (lambda m, t: m.quantile(t, m.tensor([[0.5]], dtype=m.float64)), "scalar or 1D"),
        (lambda m, t: m.quantile(t, m.tensor([0.5], dtype=m.float32)), "same dtype"),
        (lambda m, t: m.quantile(t, 0.5, interpolation="cubic"), "interpolation must be"),
        (lambda m, t: m.quantile(t.long(), 0.5), "float or double"),
        (lambda m, t: m.quantile(t[:0], 0.5), "non-empty"),
        (lambda m, t: m.quantile(t, 0.5, dim=2), "out of range"),
    ],
)
def test_quantile_rejects_bad_arguments_like_torch(backend: str, call, match: str) -> None:
    raises_like_torch(call, uniform((2, 3)), match=[match])


@pytest.mark.parametrize("interpolation", ["linear", "midpoint", "higher"])
def test_quantile_has_torch_gradients(backend: str, interpolation: str) -> None:
    def q(m, t):
        qs = m.tensor([0.1, 0.5, 0.8], dtype=m.float64)
        return m.quantile(t, qs, dim=1, interpolation=interpolation)

    grads_like_torch(q, DISTINCT)
    grads_like_torch(lambda m, t: m.nanquantile(t, 0.35, interpolation=interpolation), DISTINCT)
    gradcheck(lambda t: tw.quantile(t, 0.3, -1, interpolation=interpolation).sin(), DISTINCT)


# -- mode ----------------------------------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["int64", "float64", "uint8"])
@pytest.mark.parametrize(("dim", "keepdim"), [(0, False), (-1, True)])
def test_mode_takes_the_smallest_most_frequent_like_torch(
    backend: str, dtype: str, dim: int, keepdim: bool
) -> None:
    values = np.abs(TIES) if dtype == "uint8" else TIES
    like_torch(lambda m, t: m.mode(t, dim, keepdim), values, dtype=dtype)


def test_mode_of_bool_0d_empty_and_nan_like_torch(backend: str) -> None:
    like_torch(lambda m, t: t.mode(), TIES > 0)
    like_torch(lambda m, t: m.mode(t, 0), np.array(3.0))
    like_torch(lambda m, t: m.mode(t, 1), np.zeros((0, 3)))
    raises_like_torch(lambda m, t: m.mode(t, 0), np.zeros((0, 3)), match=["non-zero size"])
    # NaNs count as one value; PyTorch's index for them follows no rule, so compare values.
    like_torch(lambda m, t: m.mode(t).values, np.array([[nan, 1.0, nan], [nan, 2.0, 2.0]]))


# -- unique --------------------------------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize(("inverse", "counts"), [(False, False), (True, False), (True, True)])
def test_unique_like_torch(backend: str, dtype: str, inverse: bool, counts: bool) -> None:
    values = TIES > 0 if dtype == "bool" else TIES
    like_torch(
        lambda m, t: m.unique(t, return_inverse=inverse, return_counts=counts), values, dtype=dtype
    )
    like_torch(lambda m, t: t.unique(sorted=False, return_counts=counts), values, dtype=dtype)


def test_unique_of_nan_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.unique(t, return_inverse=True, return_counts=True), WITH_NAN)
    like_torch(lambda m, t: m.unique(t, return_inverse=True), np.array(2.0))
    like_torch(lambda m, t: m.unique(t, return_inverse=True, return_counts=True), np.zeros((0, 2)))


# -- bincount, histc -----------------------------------------------------------------------------


@pytest.mark.cunumeric
@pytest.mark.parametrize("weights", [None, "float32", "float64", "int64", "float16"])
@pytest.mark.parametrize("minlength", [0, 7])
def test_bincount_like_torch(backend: str, weights: str | None, minlength: int) -> None:
    x = np.abs(TIES).reshape(-1)
    w = uniform(x.shape, seed=2)
    if weights is None:
        like_torch(lambda m, t: m.bincount(t, minlength=minlength), x)
        like_torch(lambda m, t: m.bincount(t), x.astype(np.uint8))
    else:
        like_torch(lambda m, t: t.bincount(m.tensor(w).to(getattr(m, weights)), minlength), x)


def test_bincount_of_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.bincount(t), np.zeros(0, np.int64))
    like_torch(lambda m, t: m.bincount(t, minlength=3), np.zeros(0, np.int64))


@pytest.mark.parametrize(
    ("x", "call", "match"),
    [
        (np.array([1, -1]), lambda m, t: m.bincount(t), "non-negative"),
        (np.array([[1, 2]]), lambda m, t: m.bincount(t), "1-d"),
        (np.array([1, 2]), lambda m, t: m.bincount(t, minlength=-1), "minlength"),
        (np.array([1, 2]), lambda m, t: m.bincount(t, m.tensor([1.0])), "same length"),
        (np.array([1.0, 2.0]), lambda m, t: m.bincount(t), "float"),
    ],
)
def test_bincount_rejects_bad_input_like_torch(backend: str, x, call, match: str) -> None:
    raises_like_torch(call, x, match=[match])


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_histc_like_torch(backend: str, dtype: str) -> None:
    x = uniform((6, 5), seed=7)
    like_torch(lambda m, t: m.histc(t, bins=7), x, dtype=dtype)
    like_torch(lambda m, t: t.histc(4, min=-1, max=1.5), x, dtype=dtype)


def test_histc_of_edges_nan_and_degenerate_ranges_like_torch(backend: str) -> None:
    x = np.array([1.0, 2.0, 3.0, nan, 5.0, -np.inf, 1.0])
    like_torch(lambda m, t: m.histc(t, bins=4, min=1, max=3), x)  # 3 goes to the last bin
    like_torch(lambda m, t: m.histc(t, bins=4), np.array([2.0, 2.0]))
    like_torch(lambda m, t: m.histc(t, bins=3), np.zeros(0))
    like_torch(lambda m, t: m.histc(t, bins=5), np.array([[1.0, 5.0], [2.0, 2.0]]))


@pytest.mark.parametrize(
    ("x", "call", "match"),
    [
        (np.array([1.0]), lambda m, t: m.histc(t, bins=0), "bins must be > 0"),
        (np.array([1.0]), lambda m, t: m.histc(t, min=2, max=1), "max must be larger than min"),
        (np.array([1.0, np.inf]), lambda m, t: m.histc(t), "not finite"),
        (np.array([1, 2]), lambda m, t: m.histc(t), "int64"),
    ],
)
def test_histc_rejects_bad_arguments_like_torch(backend: str, x, call, match: str) -> None:
    raises_like_torch(call, x, match=[match])


# -- searchsorted, bucketize ---------------------------------------------------------------------

SEQUENCE = np.array([-1.0, 0.5, 0.5, 0.5, 2.0, 3.0])
PROBES = np.array([[-2.0, -1.0, 0.5, 0.7], [3.0, 4.0, nan, -np.inf]])


@pytest.mark.cunumeric
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_like_torch(backend: str, right: bool) -> None:
    seq = SEQUENCE
    like_torch(lambda m, s, v: m.searchsorted(s, v, right=right), seq, PROBES)
    like_torch(lambda m, v, b: m.bucketize(v, b, right=right), PROBES, seq)
    like_torch(lambda m, s, v: m.searchsorted(s, v, side="right" if right else "left"), seq, PROBES)


def test_searchsorted_batched_sorter_scalars_and_dtypes_like_torch(backend: str) -> None:
    batched = np.sort(np.random.default_rng(8).integers(0, 5, (2, 3, 6)), -1)
    probes = np.random.default_rng(9).integers(-1, 6, (2, 3, 4))
    like_torch(lambda m, s, v: m.searchsorted(s, v, right=True, out_int32=True), batched, probes)
    like_torch(lambda m, s, v: m.searchsorted(s, v), batched, probes.astype(np.float64))
    shuffled = np.array([3.0, -1.0, 0.5, 2.0])
    sorter = np.argsort(shuffled)
    like_torch(lambda m, s, v, o: m.searchsorted(s, v, sorter=o), shuffled, PROBES, sorter)
    like_torch(lambda m, s: m.searchsorted(s, 0.5, right=True), SEQUENCE)
    like_torch(lambda m, s: m.bucketize(2, s, out_int32=True), SEQUENCE)
    like_torch(lambda m, s, v: m.searchsorted(s, v), SEQUENCE, np.array(0.6))
    like_torch(lambda m, s, v: m.searchsorted(s, v), np.zeros(0), PROBES)
    like_torch(lambda m, s, v: m.bucketize(v, s), SEQUENCE, np.zeros((0, 2)))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, s, v: m.searchsorted(s, v, side="middle"), "side can only be"),
        (lambda m, s, v: m.searchsorted(s, v, side="left", right=True), "opposites"),
        (lambda m, s, v: m.searchsorted(s.reshape(2, 3), v[:, :1].T), "first N-1 dimensions"),
        (lambda m, s, v: m.searchsorted(s[0], v), "1 dimension"),
        (lambda m, s, v: m.bucketize(v, s.reshape(2, 3)), "1 dimension"),
    ],
)
def test_searchsorted_rejects_bad_arguments_like_torch(backend: str, call, match: str) -> None:
    raises_like_torch(call, SEQUENCE, PROBES, match=[match])
