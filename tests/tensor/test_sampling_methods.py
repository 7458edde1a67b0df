"""The in-place sampling fills: ``geometric_``, ``cauchy_`` and ``log_normal_`` by their
laws (exact probabilities and quantiles), their errors against PyTorch's; ``random_``'s three
signatures and per-dtype default ranges against PyTorch's; ``bernoulli_`` with a float or a
tensor ``p`` and ``exponential_`` with PyTorch's keywords; every fill repeats with a seeded
generator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import dtype_name, host, raises_like_torch, require

N = 20000
#: Five standard errors of a frequency estimated from N draws, at its worst (p = 1/2).
FREQ_TOL = 5 * math.sqrt(0.25 / N)


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float64", "int64", "int32"])
def test_geometric_frequencies_match_the_law(backend: str, dtype: str) -> None:
    p = 0.3
    tw.manual_seed(0)
    x = tw.zeros(N, dtype=getattr(tw, dtype)).geometric_(p)
    assert dtype_name(x.dtype) == dtype
    draws = host(x)
    assert draws.min() >= 1 and np.all(draws == np.round(draws))
    k = np.arange(1, 8)
    expected = (1 - p) ** (k - 1) * p
    observed = np.array([(draws == j).mean() for j in k])
    np.testing.assert_allclose(observed, expected, atol=FREQ_TOL)


def test_cauchy_quartiles_match_the_law(backend: str) -> None:
    median, sigma = 1.5, 0.5
    tw.manual_seed(1)
    draws = host(tw.empty(N, dtype=tw.float64).cauchy_(median, sigma=sigma))
    # Its CDF is 1/2 + atan((x - median) / sigma) / pi: quartiles at median -/+ sigma.
    for q, at in ((0.25, median - sigma), (0.5, median), (0.75, median + sigma)):
        assert abs((draws <= at).mean() - q) < FREQ_TOL


def test_log_normal_is_exp_of_a_normal(backend: str) -> None:
    tw.manual_seed(2)
    draws = host(tw.empty(N, dtype=tw.float64).log_normal_(0.5, std=0.25))
    assert draws.min() > 0
    logs = np.log(draws)
    assert abs(logs.mean() - 0.5) < 5 * 0.25 / math.sqrt(N)
    assert abs(logs.std() - 0.25) < 0.01


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m: m.zeros(3).geometric_(0.0), ["p=0"]),
        (lambda m: m.zeros(3).geometric_(1.0), ["p=1"]),
        (lambda m: m.zeros(3, dtype=m.bool).geometric_(0.5), ["bool"]),
        (lambda m: m.zeros(3).cauchy_(1.0, 0.0), ["sigma"]),
        (lambda m: m.zeros(3, dtype=m.int64).cauchy_(), ["floating"]),
        (lambda m: m.zeros(3).log_normal_(1.0, -1.0), ["std"]),
        (lambda m: m.zeros(3, dtype=m.int64).log_normal_(), []),
        (lambda m: m.zeros(3).exponential_(lambd=-1.0), ["lambd"]),
        (lambda m: m.zeros(4).bernoulli_(m.full((3,), 0.5)), []),
        (lambda m: m.zeros(4).bernoulli_(m.full((4,), 1, dtype=m.int64)), []),
        (lambda m: m.zeros(4).bernoulli_(m.tensor([1.5])), []),
        (lambda m: m.zeros(4).bernoulli_(p=1.5), ["1.5"]),
        (lambda m: m.zeros(4, dtype=m.int8).random_(200), []),
        (lambda m: m.zeros(4, dtype=m.int8).random_(-200, 3), []),
    ],
)
def test_sampling_errors_like_torch(backend: str, call, match: list) -> None:
    raises_like_torch(call, match=match)


#: ``random_()``'s inclusive upper bound: 2**digits for floats (every integer up to it is
#: exact), the maximum for integers.
DEFAULT_TOP = {
    "float16": 2**11,
    "float32": 2**24,
    "float64": 2**53,
    "int8": 127,
    "uint8": 255,
    "bool": 1,
}


@pytest.mark.parametrize("dtype", list(DEFAULT_TOP))
def test_random_default_range_is_torchs(backend: str, dtype: str) -> None:
    require(dtype)
    top = DEFAULT_TOP[dtype]
    tw.manual_seed(3)
    ours = host(tw.zeros(N, dtype=getattr(tw, dtype)).random_()).astype(np.float64)
    theirs = torch.zeros(N, dtype=getattr(torch, dtype)).random_().double().numpy()
    for draws in (ours, theirs):
        assert draws.min() >= 0 and draws.max() <= top and draws.max() > top * 0.99
        assert np.all(draws == np.round(draws))
        if top <= 255:  # every value of a small range turns up
            assert len(np.unique(draws)) == top + 1


@pytest.mark.cunumeric
def test_random_takes_torchs_three_signatures(backend: str) -> None:
    tw.manual_seed(4)
    for args, kwargs, low, high in (
        ((), {"to": 6}, 0, 5),
        ((6,), {}, 0, 5),
        ((-3, 4), {}, -3, 3),
        ((-3,), {"to": 4}, -3, 3),
        ((120, None), {}, 120, 127),
    ):
        draws = host(tw.zeros(2000, dtype=tw.int8).random_(*args, **kwargs))
        assert set(np.unique(draws)) == set(range(low, high + 1)), (args, kwargs)


@pytest.mark.cunumeric
def test_bernoulli_takes_a_float_or_a_tensor_p(backend: str) -> None:
    tw.manual_seed(5)
    ones = host(tw.zeros(N, dtype=tw.float64).bernoulli_(p=0.3))
    assert set(np.unique(ones)) == {0.0, 1.0} and abs(ones.mean() - 0.3) < FREQ_TOL
    p = tw.tensor([0.0, 0.25, 1.0], dtype=tw.float32)
    rows = host(tw.zeros(N // 4, 3, dtype=tw.bool).bernoulli_(p))
    np.testing.assert_allclose(rows.mean(0), [0.0, 0.25, 1.0], atol=2 * FREQ_TOL)


def test_exponential_takes_lambd(backend: str) -> None:
    tw.manual_seed(6)
    draws = host(tw.empty(N, dtype=tw.float64).exponential_(lambd=2.0))
    assert draws.min() >= 0 and abs(draws.mean() - 0.5) < 5 * 0.5 / math.sqrt(N)


@pytest.mark.parametrize(
    "fill",
    [
        lambda t, g: t.geometric_(0.2, generator=g),
        lambda t, g: t.cauchy_(generator=g),
        lambda t, g: t.log_normal_(generator=g),
        lambda t, g: t.exponential_(generator=g),
        lambda t, g: t.bernoulli_(0.5, generator=g),
        lambda t, g: t.random_(10, generator=g),
    ],
)
def test_fills_repeat_with_a_seeded_generator(backend: str, fill) -> None:
    first, second = (
        host(fill(tw.zeros(50, dtype=tw.float64), tw.Generator().manual_seed(7))) for _ in "ab"
    )
    third = host(fill(tw.zeros(50, dtype=tw.float64), tw.Generator().manual_seed(8)))
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, third)
