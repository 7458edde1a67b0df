"""Random streams: every random op repeats from ``tw.manual_seed`` on every backend and
changes with the seed (dropout on torch, and the LSTM's dropout, once drew from torch's global
generator), ``tw.Generator`` (its own stream, the same numbers on every backend, PyTorch's
seeds and state round trip), the ``tw.random`` functions, and the distributions and errors
of ``bernoulli``, ``random_`` and ``exponential_`` against PyTorch.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn as nn
import tensorweaver.nn.functional as F
import torch
from tensor_reference import host, raises_like_torch, require
from tensorweaver.utils import data
from tw_backends import FAST, entered

Draw = Callable[[Any], np.ndarray]


def _host(value: Any) -> np.ndarray:
    if isinstance(value, tw.Tensor):
        return host(value)
    if isinstance(value, (list, tuple)):
        return np.concatenate([_host(v).reshape(-1) for v in value])
    return np.asarray(value)


def _fill(method: str, *args: Any, dtype: Any = tw.float64) -> Draw:
    return lambda g: _host(getattr(tw.empty(64, dtype=dtype), method)(*args, generator=g))


def _init(name: str, *args: Any, shape: tuple = (8, 8)) -> Draw:
    return lambda g: _host(getattr(nn.init, name)(tw.empty(*shape), *args, generator=g))


#: Every op that takes ``generator=``, as ``draw(generator or None) -> host values``.
DRAWS: dict[str, Draw] = {
    "rand": lambda g: _host(tw.rand(64, generator=g)),
    "rand_float64": lambda g: _host(tw.rand(8, 8, generator=g, dtype=tw.float64)),
    "randn": lambda g: _host(tw.randn(8, 8, generator=g, dtype=tw.float64)),
    "randint": lambda g: _host(tw.randint(-5, 5, (64,), generator=g)),
    "randint_float": lambda g: _host(tw.randint(0, 9, (64,), generator=g, dtype=tw.float32)),
    "randperm": lambda g: _host(tw.randperm(64, generator=g)),
    "rand_like": lambda g: _host(tw.rand_like(tw.zeros(64), generator=g)),
    "randn_like": lambda g: _host(tw.randn_like(tw.zeros(64), generator=g)),
    "randint_like": lambda g: _host(tw.randint_like(tw.zeros(64), 10, generator=g)),
    "uniform_": _fill("uniform_", -2.0, 3.0),
    "normal_": _fill("normal_", 1.0, 2.0),
    "bernoulli_": _fill("bernoulli_", 0.5),
    "random_": _fill("random_", 0, 100),
    "random_int32": _fill("random_", dtype=tw.int32),
    "exponential_": _fill("exponential_", 2.0),
    "bernoulli": lambda g: _host(tw.bernoulli(tw.full((64,), 0.5), generator=g)),
    "bernoulli_p": lambda g: _host(tw.zeros(64).bernoulli(0.3, generator=g)),
    "multinomial": lambda g: _host(
        tw.multinomial(tw.tensor([0.1, 0.2, 0.3, 0.4]), 64, replacement=True, generator=g)
    ),
    "multinomial_no_replacement": lambda g: _host(tw.ones(4, 16).multinomial(16, generator=g)),
    "init.uniform_": _init("uniform_", -1.0, 1.0),
    "init.normal_": _init("normal_", 0.0, 2.0),
    "init.xavier_uniform_": _init("xavier_uniform_"),
    "init.xavier_normal_": _init("xavier_normal_"),
    "init.kaiming_uniform_": _init("kaiming_uniform_"),
    "init.kaiming_normal_": _init("kaiming_normal_"),
    "init.trunc_normal_": _init("trunc_normal_"),
    "init.orthogonal_": _init("orthogonal_", shape=(6, 10)),
    "random_split": lambda g: np.concatenate(
        [s.indices for s in data.random_split(range(64), [40, 24], generator=g)]
    ),
    "RandomSampler": lambda g: np.array(list(data.RandomSampler(range(64), generator=g))),
    "RandomSampler_replacement": lambda g: np.array(
        list(data.RandomSampler(range(64), replacement=True, num_samples=80, generator=g))
    ),
    "DataLoader": lambda g: _host(
        [b[0] for b in data.DataLoader(_rows(), batch_size=16, shuffle=True, generator=g)]
    ),
}
#: Computed on the device after the draw, so equal across backends only to rounding.
DEVICE_MATH = {"exponential_", "init.trunc_normal_", "multinomial", "multinomial_no_replacement"}


def _rows() -> data.TensorDataset:
    return data.TensorDataset(tw.arange(64))


def _lstm(mode: type) -> np.ndarray:
    rnn = mode(4, 5, num_layers=3, dropout=0.5)
    out, _ = rnn(tw.randn(6, 3, 4))
    return _host(out)


def _attention() -> np.ndarray:
    mha = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = tw.randn(5, 2, 8)
    return _host(mha(x, x, x)[0])


#: Random ops with no ``generator`` argument in PyTorch: they draw from the device's stream.
SEEDED_ONLY: dict[str, Callable[[], np.ndarray]] = {
    "dropout": lambda: _host(F.dropout(tw.ones(64, 8), 0.5)),
    "Dropout": lambda: _host(nn.Dropout(0.3)(tw.ones(64, 8))),
    "dropout2d": lambda: _host(F.dropout2d(tw.ones(4, 16, 2, 2), 0.5)),
    "scaled_dot_product_attention": lambda: _host(
        F.scaled_dot_product_attention(
            tw.ones(1, 8, 4), tw.ones(1, 8, 4), tw.rand(1, 8, 4), dropout_p=0.5
        )
    ),
    "MultiheadAttention": _attention,
    "LSTM": lambda: _lstm(nn.LSTM),
    "GRU": lambda: _lstm(nn.GRU),
    "Linear": lambda: _host(nn.Linear(8, 8).weight),
    "DataLoader_unseeded": lambda: _host(
        [b[0] for b in data.DataLoader(_rows(), batch_size=16, shuffle=True)]
    ),
}


#: The few cases that also run on cuPyNumeric (about 0.4 ms an op there).
ON_CUNUMERIC = {"rand", "randn", "randint", "randperm", "bernoulli_", "dropout", "DataLoader"}


def _cases(names: Any) -> list[Any]:
    return [pytest.param(n, marks=pytest.mark.cunumeric) if n in ON_CUNUMERIC else n for n in names]


def _seeded(draw: Callable[[], np.ndarray], seed: int) -> np.ndarray:
    tw.manual_seed(seed)
    return draw()


@pytest.mark.parametrize("name", _cases([*DRAWS, *SEEDED_ONLY]))
def test_manual_seed_repeats_every_random_op_and_the_seed_matters(backend: str, name: str) -> None:
    draw = SEEDED_ONLY[name] if name in SEEDED_ONLY else lambda: DRAWS[name](None)
    first = _seeded(draw, 7)
    np.testing.assert_array_equal(_seeded(draw, 7), first)
    assert not np.array_equal(_seeded(draw, 8), first)


#: cuPyNumeric reads seed 0 as "no seed" (``seed or time.perf_counter_ns()`` in its
#: BitGenerator); the cunumeric backend must map it to a seed of its own.
@pytest.mark.parametrize(
    "spec",
    [*FAST, pytest.param("cunumeric", marks=pytest.mark.cunumeric)],
)
def test_seed_zero_repeats_too(spec: str) -> None:
    with entered(spec):
        first = _seeded(lambda: _host(tw.rand(16)), 0)
        np.testing.assert_array_equal(_seeded(lambda: _host(tw.rand(16)), 0), first)


@pytest.mark.parametrize("name", _cases(DRAWS))
def test_a_generator_is_a_stream_of_its_own(backend: str, name: str) -> None:
    draw = DRAWS[name]
    first = draw(tw.Generator().manual_seed(3))
    np.testing.assert_array_equal(draw(tw.Generator().manual_seed(3)), first)
    assert not np.array_equal(draw(tw.Generator().manual_seed(4)), first)
    # Drawing from a generator leaves the device's stream and the default generator alone.
    tw.manual_seed(5)
    expected = _host(tw.rand(8)), _host(tw.randperm(16))
    tw.manual_seed(5)
    draw(tw.Generator().manual_seed(3))
    np.testing.assert_array_equal(_host(tw.rand(8)), expected[0])
    np.testing.assert_array_equal(_host(tw.randperm(16)), expected[1])
    # ... and reseeding those leaves the generator alone.
    g = tw.Generator().manual_seed(3)
    draw(g)
    before = host(g.get_state())
    tw.manual_seed(3)
    np.testing.assert_array_equal(host(g.get_state()), before)


def _on(spec: str, draw: Draw, seed: int = 11) -> np.ndarray:
    with entered(spec):
        return draw(tw.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", [n for n in DRAWS if n not in DEVICE_MATH])
def test_a_generator_gives_the_same_numbers_on_every_backend(name: str) -> None:
    reference = _on(FAST[0], DRAWS[name])
    for spec in FAST[1:]:
        np.testing.assert_array_equal(_on(spec, DRAWS[name]), reference, err_msg=spec)


@pytest.mark.parametrize("name", sorted(DEVICE_MATH))
def test_a_generator_gives_the_same_numbers_on_every_backend_to_rounding(name: str) -> None:
    reference = _on(FAST[0], DRAWS[name])
    for spec in FAST[1:]:
        np.testing.assert_allclose(_on(spec, DRAWS[name]), reference, rtol=1e-5, err_msg=spec)


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", sorted(ON_CUNUMERIC & set(DRAWS)))
def test_a_generator_gives_the_same_numbers_on_cunumeric(name: str) -> None:
    np.testing.assert_array_equal(_on("cunumeric", DRAWS[name]), _on("numpy", DRAWS[name]))


def test_dropout_on_torch_leaves_torch_own_generator_alone() -> None:
    with entered("torch:cpu"):
        torch.manual_seed(0)
        expected = torch.rand(4)
        torch.manual_seed(0)
        F.dropout(tw.ones(256), 0.5)
        nn.LSTM(2, 3, num_layers=2, dropout=0.5)(tw.ones(4, 1, 2))
        torch.testing.assert_close(torch.rand(4), expected)


@pytest.mark.parametrize("p", [0.2, 0.7])
def test_dropout_statistics_and_gradient(backend: str, p: float) -> None:
    tw.manual_seed(5)
    x = (tw.rand(200, 100, dtype=tw.float64) + 1).requires_grad_()
    out = F.dropout(x, p)
    out.sum().backward()
    kept = host(out) != 0
    n = kept.size
    assert abs((1 - kept.mean()) - p) < 5 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(host(out)[kept], host(x.detach())[kept] / (1 - p))
    np.testing.assert_allclose(host(x.grad), kept / (1 - p))


# --- tw.Generator and tw.random -----------------------------------------------------------


def test_generator_seeds_like_torch() -> None:
    for seed in (0, 5, 2**63, 2**64 - 1, -1, -(2**63)):
        ours = tw.Generator().manual_seed(seed).initial_seed()
        assert ours == torch.Generator().manual_seed(seed).initial_seed(), seed
    g = tw.Generator()
    assert g.manual_seed(9) is g
    fresh = g.seed()
    assert isinstance(fresh, int) and g.initial_seed() == fresh and 0 <= fresh < 2**64
    assert tw.Generator().initial_seed() != tw.Generator().initial_seed()


@pytest.mark.parametrize("bad", [2**64, -(2**63) - 1])
def test_seeds_out_of_range_raise_like_torch(bad: int) -> None:
    raises_like_torch(lambda m: m.Generator().manual_seed(bad), match=["overflow", str(bad)])
    raises_like_torch(lambda m: m.manual_seed(bad), match=["overflow"])


def test_generator_state_round_trips() -> None:
    g = tw.Generator().manual_seed(21)
    tw.rand(5, generator=g)
    state = g.get_state()
    assert state.dtype is tw.uint8 and tuple(state.shape) == (48,)
    expected = host(tw.randn(7, generator=g))
    other = tw.Generator().manual_seed(1)
    assert other.set_state(state) is other and other.initial_seed() == 21
    np.testing.assert_array_equal(host(tw.randn(7, generator=other)), expected)
    np.testing.assert_array_equal(
        host(tw.Generator().manual_seed(4).get_state()),
        host(tw.Generator().manual_seed(4).get_state()),
    )
    with entered("torch:cpu"):  # a state may come back from any device
        np.testing.assert_array_equal(
            host(tw.rand(3, generator=other.set_state(state.to("torch:cpu")))),
            host(tw.rand(3, generator=tw.Generator().set_state(state))),
        )


def test_generator_state_errors_like_torch() -> None:
    raises_like_torch(lambda m: m.Generator().set_state(m.zeros(48)), match=["uint8"])
    raises_like_torch(
        lambda m: m.Generator().set_state(m.zeros(3, dtype=m.uint8)), match=["48", "3"]
    )
    raises_like_torch(lambda m: m.rand(3, generator=3), match=["generator"])


def test_generator_device_and_repr() -> None:
    assert tw.Generator().device.type == "cpu"
    assert tw.Generator(device="cpu").device == tw.default_generator.device
    assert tw.Generator(device="torch:cpu").device == "torch:cpu"
    assert "initial_seed=3" in repr(tw.Generator().manual_seed(3))
    with pytest.raises(TypeError, match="tw.Generator"):
        tw.rand(3, generator=torch.Generator())


@pytest.mark.cunumeric
def test_manual_seed_and_seed_reach_the_device_and_the_default_generator(backend: str) -> None:
    assert tw.manual_seed(5) is tw.default_generator
    assert tw.initial_seed() == tw.random.initial_seed() == 5
    assert tw.random.manual_seed is tw.manual_seed and tw.random.seed is tw.seed
    fresh = tw.seed()
    assert tw.initial_seed() == fresh
    first = host(tw.rand(16)), host(tw.randperm(16))
    tw.manual_seed(fresh)
    np.testing.assert_array_equal(host(tw.rand(16)), first[0])
    np.testing.assert_array_equal(host(tw.randperm(16)), first[1])
    assert tw.seed() != fresh


def test_get_and_set_rng_state_cover_the_default_generator(backend: str) -> None:
    state = tw.get_rng_state()
    assert state.dtype is tw.uint8 and state.ndim == 1  # the size: tests/api/test_rng_state.py
    expected = host(tw.randperm(30)), _host([b[0] for b in data.DataLoader(_rows(), 8, True)])
    tw.random.set_rng_state(state)
    np.testing.assert_array_equal(host(tw.randperm(30)), expected[0])
    np.testing.assert_array_equal(
        _host([b[0] for b in data.DataLoader(_rows(), 8, True)]), expected[1]
    )
    np.testing.assert_array_equal(host(tw.random.get_rng_state()), host(tw.get_rng_state()))


# --- distributions ------------------------------------------------------------------------


@pytest.mark.parametrize("generator", [False, True], ids=["device", "generator"])
def test_uniform_and_normal_distributions(backend: str, generator: bool) -> None:
    g = tw.Generator().manual_seed(2) if generator else None
    tw.manual_seed(2)
    u = host(tw.empty(20000, dtype=tw.float64).uniform_(-1.0, 3.0, generator=g))
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    z = host(tw.empty(20000, dtype=tw.float64).normal_(2.0, 0.5, generator=g))
    assert abs(z.mean() - 2.0) < 0.02 and abs(z.std() - 0.5) < 0.02
    r = host(tw.randint(-3, 4, (5000,), generator=g))
    assert set(np.unique(r)) == set(range(-3, 4))
    np.testing.assert_array_equal(np.sort(host(tw.randperm(50, generator=g))), np.arange(50))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_generator_uniform_stays_below_its_upper_bound(backend: str, dtype: str) -> None:
    require(dtype)
    g = tw.Generator().manual_seed(0)
    t = getattr(tw, dtype)
    for low, high in ((0.0, 1.0), (-3.0, -1.0), (0.5, 0.7)):
        x = host(tw.empty(100000, dtype=t).uniform_(low, high, generator=g))
        assert x.min() >= low and x.max() < high, (low, high)
    x = host(tw.rand(100000, generator=g, dtype=t))
    assert x.max() < 1 and abs(x.mean() - 0.5) < 0.01


@pytest.mark.parametrize("generator", [False, True], ids=["device", "generator"])
def test_bernoulli_frequencies(backend: str, generator: bool) -> None:
    g = tw.Generator().manual_seed(1) if generator else None
    tw.manual_seed(1)
    p = tw.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=tw.float64)
    draws = tw.bernoulli(p.expand(4000, 5), generator=g)
    assert draws.dtype is tw.float64
    freq = host(draws).mean(0)
    np.testing.assert_allclose(freq, host(p), atol=5 * np.sqrt(0.25 / 4000))
    ints = tw.zeros(4000, dtype=tw.int64).bernoulli_(0.25, generator=g)
    assert ints.dtype is tw.int64 and set(np.unique(host(ints))) == {0, 1}
    assert abs(host(ints).mean() - 0.25) < 0.04
    rows = tw.zeros(3000, 2).bernoulli_(tw.tensor([0.2, 0.8]), generator=g)
    np.testing.assert_allclose(host(rows).mean(0), [0.2, 0.8], atol=0.04)


def test_bernoulli_errors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m: m.bernoulli(m.tensor([0.5, 1.5])), match=["bernoulli", r"\[0, 1\]"])
    raises_like_torch(lambda m: m.bernoulli(m.tensor([float("nan")])), match=["bernoulli"])
    raises_like_torch(lambda m: m.bernoulli(m.zeros(3), 1.5), match=["1.5"])
    raises_like_torch(lambda m: m.zeros(3).bernoulli_(-0.1), match=["-0.1"])
    raises_like_torch(lambda m: m.bernoulli(m.zeros(3, dtype=m.int64)), match=["int64"])


@pytest.mark.parametrize(
    ("dtype", "args", "low", "high"),
    [
        ("float32", (), 0, 2**24),
        ("float64", (7,), 0, 6),
        ("int64", (-4, 3), -4, 2),
        ("uint8", (), 0, 255),
        ("int8", (), 0, 127),
        ("bool", (), 0, 1),
        ("int32", (5, None), 5, 2**31 - 1),
    ],
)
def test_random_bounds(backend: str, dtype: str, args: tuple, low: int, high: int):
    tw.manual_seed(0)
    x = tw.empty(4000, dtype=getattr(tw, dtype)).random_(*args)
    values = host(x).astype(np.float64)
    assert x.dtype is getattr(tw, dtype)
    assert values.min() >= low and values.max() <= high
    assert values.min() < low + (high - low) / 10 and values.max() > high - (high - low) / 10
    assert np.all(values == np.round(values))


def test_random_and_exponential_errors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m: m.zeros(3).random_(5, 5), match=["from=5", "to=5"])
    raises_like_torch(lambda m: m.zeros(3).random_(-3), match=["from=0", "to=-3"])
    raises_like_torch(lambda m: m.zeros(3, dtype=m.uint8).random_(300), match=["uint8", "255"])
    raises_like_torch(lambda m: m.zeros(3).exponential_(0), match=["lambd", "0"])
    raises_like_torch(lambda m: m.zeros(3, dtype=m.int64).exponential_(), match=["int64"])


def test_exponential_distribution(backend: str) -> None:
    tw.manual_seed(3)
    x = host(tw.empty(20000, dtype=tw.float64).exponential_(4.0))
    assert x.min() >= 0 and abs(x.mean() - 0.25) < 0.01 and abs(x.std() - 0.25) < 0.01


def test_like_factories_take_torch_keywords(backend: str) -> None:
    base = tw.zeros(3, 4, dtype=tw.float64)
    for fn in (tw.rand_like, tw.randn_like):
        out = fn(base, dtype=tw.float32, requires_grad=True)
        assert out.dtype is tw.float32 and out.shape == (3, 4) and out.requires_grad
    ints = tw.randint_like(base, 2, 5)
    assert ints.dtype is tw.float64 and set(np.unique(host(ints))) <= {2.0, 3.0, 4.0}
    assert tw.randint_like(base, 3, dtype=tw.int32).dtype is tw.int32
    with entered("torch:cpu"):
        moved = tw.rand_like(tw.zeros(2, device="numpy"), device="torch:cpu")
        assert moved.device == "torch:cpu"


# randperm(-3) gave an empty tensor, randperm(300, dtype=uint8) wrapped silently, a bool
# dtype gave all True, and a one-element integer tensor as n raised numpy's AxisError.
@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.randperm(-3),
        lambda m: m.randperm(3.0),
        lambda m: m.randperm(True),
        lambda m: m.randperm(m.tensor([3.0])),
        lambda m: m.randperm(300, dtype=m.uint8),
        lambda m: m.randperm(129, dtype=m.int8),
        lambda m: m.randperm(3, dtype=m.bool),
    ],
)
def test_randperm_refuses_as_torch(call: Callable[..., Any]) -> None:
    raises_like_torch(call)


@pytest.mark.parametrize("n", [0, 1, 256])
def test_randperm_takes_an_integer_tensor_and_a_full_small_dtype(n: int) -> None:
    got = tw.randperm(tw.tensor(n), dtype=tw.uint8)
    assert got.dtype is tw.uint8
    assert sorted(got.tolist()) == list(range(n))
