"""Ordering and sampling: ``sort``, ``argsort``, ``msort``, ``topk`` against PyTorch (stable
order, ties, NaN, every dtype, 0-d and empty inputs, gradients), ``multinomial`` by its
frequencies and its errors, and the host sort a backend without ``argsort`` falls back on.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

nan = float("nan")
#: Few distinct values: many ties, which a stable sort keeps in their original order.
TIES = np.random.default_rng(3).integers(-2, 3, (3, 5, 4))


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_keeps_ties_in_order_like_torch(
    backend: str, dtype: str, dim: int, descending: bool
) -> None:
    values = TIES > 0 if dtype == "bool" else np.abs(TIES) if dtype == "uint8" else TIES
    like_torch(
        lambda m, t: t.sort(dim=dim, descending=descending, stable=True),
        values,
        dtype=dtype,
    )
    like_torch(
        lambda m, t: m.argsort(t, dim=dim, descending=descending, stable=True), values, dtype=dtype
    )


@pytest.mark.cunumeric
@pytest.mark.parametrize("descending", [False, True])
def test_sort_puts_nan_last_or_first_like_torch(backend: str, descending: bool) -> None:
    x = np.array([[3.0, nan, 1.0, 3.0, -np.inf, nan, np.inf], [0.0, -0.5, nan, 2.0, 2.0, 1.0, 0.0]])
    like_torch(lambda m, t: m.sort(t, dim=-1, descending=descending, stable=True), x)


def test_sort_of_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.sort(t), np.array(2.5))
    like_torch(lambda m, t: m.sort(t, 1), np.zeros((3, 0)))
    like_torch(lambda m, t: t.argsort(dim=0), np.zeros((0, 2)))
    like_torch(lambda m, t: m.topk(t, 1), np.array(4.0))


def test_msort_sorts_the_first_dimension_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.msort(t), uniform((5, 3)))


@pytest.mark.cunumeric
@pytest.mark.parametrize(("k", "dim", "largest"), [(3, -1, True), (1, 0, False), (0, 1, True)])
def test_topk_like_torch(backend: str, k: int, dim: int, largest: bool) -> None:
    x = np.random.default_rng(1).permutation(60).reshape(3, 4, 5).astype(np.float64)  # no ties
    like_torch(lambda m, t: t.topk(k, dim=dim, largest=largest), x)


def test_topk_of_ties_takes_the_extreme_values(backend: str) -> None:
    x = tw.tensor([[2.0, 5.0, 5.0, 1.0, 5.0]])
    values, indices = x.topk(2)
    assert values.tolist() == [[5.0, 5.0]]
    assert set(indices.tolist()[0]) <= {1, 2, 4}


def test_topk_rejects_k_out_of_range_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, t: t.topk(4), uniform((2, 3)), match=["k=4", "size 3"])
    raises_like_torch(lambda m, t: t.sort(dim=2), uniform((2, 3)), match=["dimension out of range"])


def test_sorted_values_have_torch_gradients(backend: str) -> None:
    x = TIES.astype(np.float64) + uniform(TIES.shape, 0, 0.5)  # distinct values
    grads_like_torch(lambda m, t: m.sort(t, 1, descending=True).values, x)
    grads_like_torch(lambda m, t: t.topk(2, dim=-1).values * 3, x)
    grads_like_torch(lambda m, t: t.msort(), x)


def test_sort_and_topk_gradients_match_finite_differences(backend: str) -> None:
    x = np.random.default_rng(4).permutation(24).reshape(4, 6) / 7.0
    gradcheck(lambda t: t.sort(dim=0).values.sin(), x)
    gradcheck(lambda t: t.topk(3, largest=False).values.exp(), x)


def test_sort_falls_back_to_the_host_without_argsort(backend: str) -> None:
    # A backend may leave out the optional ``argsort``: the core then sorts on the host.
    x = tw.tensor([[3.0, nan, 1.0, 3.0], [0.0, 2.0, -1.0, 2.0]])
    backend_type = type(x.backend)
    argsort = backend_type.__dict__["argsort"]
    try:
        del backend_type.argsort
        values, indices = x.sort(dim=1, descending=True)
    finally:
        backend_type.argsort = argsort
    assert indices.tolist() == [[1, 0, 3, 2], [1, 3, 0, 2]]
    np.testing.assert_array_equal(values.numpy(), [[nan, 3.0, 3.0, 1.0], [2.0, 2.0, 0.0, -1.0]])


# -- multinomial -----------------------------------------------------------------------------


def assert_near_proportions(freq: np.ndarray, p: np.ndarray, n: int) -> None:
    """Observed frequencies of ``n`` draws within five standard deviations of a binomial
    proportion of the probabilities ``p`` (so a probability of zero is never observed)."""
    bound = 5 * np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= bound), f"frequencies {freq} for probabilities {p}"


@pytest.mark.cunumeric
def test_multinomial_with_replacement_follows_the_weights(backend: str) -> None:
    tw.manual_seed(5)
    weights = np.array([[1.0, 0.0, 6.0, 3.0], [0.0, 0.0, 0.0, 2.0]])
    n = 20000
    drawn = tw.multinomial(tw.tensor(weights), n, replacement=True)
    assert drawn.dtype is tw.int64 and tuple(drawn.shape) == (2, n)
    for row, w in zip(drawn.numpy(), weights):
        p = w / w.sum()
        freq = np.bincount(row, minlength=4) / n
        assert_near_proportions(freq, p, n)


@pytest.mark.cunumeric
def test_multinomial_without_replacement_draws_distinct_categories(backend: str) -> None:
    tw.manual_seed(6)
    weights = tw.tensor([0.5, 0.0, 2.0, 1.0, 0.0, 4.0])
    for _ in range(20):
        drawn = weights.multinomial(4).tolist()
        assert sorted(drawn) == [0, 2, 3, 5]  # every positive weight, none of the zeros
    # Past the positive weights, the zeros follow in index order (PyTorch returns them too).
    assert weights.multinomial(6).tolist()[4:] == [1, 4]
    rows = weights.expand(2000, 6)  # 2000 independent first draws in one call
    firsts = np.bincount(tw.multinomial(rows, 1).flatten().numpy(), minlength=6)
    p = weights.numpy() / weights.numpy().sum()
    assert_near_proportions(firsts / 2000, p, 2000)


def test_multinomial_without_replacement_follows_sequential_draws(backend: str) -> None:
    # Drawing two without replacement: P(first = i, second = j) = p_i * p_j / (1 - p_i).
    tw.manual_seed(7)
    p = np.array([0.5, 0.3, 0.2])
    n = 6000
    pairs = tw.multinomial(tw.tensor(np.tile(p, (n, 1))), 2).numpy()
    counts = np.zeros((3, 3))
    np.add.at(counts, (pairs[:, 0], pairs[:, 1]), 1)
    want = np.array(
        [[p[i] * p[j] / (1 - p[i]) if i != j else 0 for j in range(3)] for i in range(3)]
    )
    assert_near_proportions(counts / n, want, n)


@pytest.mark.parametrize(
    ("weights", "num_samples", "replacement", "match"),
    [
        ([0.5, -0.1, 0.6], 1, True, "element < 0"),
        ([0.5, nan], 1, True, "nan"),
        ([0.0, 0.0], 1, True, "sum of probabilities"),
        ([1.0, 2.0], 3, False, "without replacement"),
        ([1.0, 2.0], 0, True, "n_sample <= 0"),
    ],
)
def test_multinomial_rejects_bad_weights_like_torch(
    backend: str, weights: list, num_samples: int, replacement: bool, match: str
) -> None:
    raises_like_torch(
        lambda m, t: m.multinomial(t, num_samples, replacement),
        np.array(weights),
        match=[match],
    )
