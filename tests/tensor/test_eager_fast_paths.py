"""The eager fast paths (issue 16) against PyTorch and against the general paths they skip:
basic ``x[int/slice]`` indexing, ``masked_fill`` with a number, ``nll_loss`` without
weights or ignored targets, cached zero scalars (signed), two-shape broadcasting and the
one-pair ``add_(alpha=)`` update. Each case includes the inputs a fast path hands to the
general path (negative steps, ignored targets, broadcast masks, half precision) and the
errors it must still raise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

X = uniform((4, 5, 3), seed=1)

#: Basic indices: ints (negative too), slices (steps, negative and clipped bounds, empty),
#: tuples of them, full slices and the empty tuple.
BASIC = [
    0,
    3,
    -1,
    -4,
    slice(1, 3),
    slice(None, None, 2),
    slice(-3, None),
    slice(-10, 10),
    slice(2, 2),
    slice(3, 1),
    slice(None),
    (1, 2),
    (-1, -2, -3),
    (slice(1, 4, 2), 0),
    (2, slice(None, None, 3), slice(1, 2)),
    (slice(None), slice(None)),
    (slice(0, 1), -5),
    (),
]


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_indexing_like_torch(backend: str, index: object) -> None:
    like_torch(lambda m, t: t[index], X)
    grads_like_torch(lambda m, t: t[index] * 2, X)


@pytest.mark.parametrize("index", [1, (slice(None), 2), (slice(1, 4, 2), slice(0, 3))], ids=repr)
def test_basic_indexing_of_non_contiguous_like_torch(backend: str, index: object) -> None:
    like_torch(lambda m, t: t.transpose(0, 2)[index], X)
    grads_like_torch(lambda m, t: t.transpose(0, 2)[index], X)


def test_basic_indexing_of_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: t[()], np.array(2.5))
    like_torch(lambda m, t: t[1:], np.zeros((0, 3)))
    like_torch(lambda m, t: t[:, 1], np.zeros((0, 3)))
    raises_like_torch(lambda m, t: t[0], np.zeros((0, 3)), match=["out of bounds"])


@pytest.mark.parametrize(
    "index", [4, -5, (0, 5), (0, 0, -4), (0, 0, 0, 0), (slice(None),) * 4], ids=repr
)
def test_basic_indexing_errors_like_torch(backend: str, index: object) -> None:
    raises_like_torch(lambda m, t: t[index], X)
    raises_like_torch(lambda m, t: t[0], np.array(1.0))


def test_basic_indexing_hands_other_indices_to_the_general_path(backend: str) -> None:
    # None, Ellipsis, bools, lists and tensors: the general path's results, as PyTorch's.
    for index in [None, Ellipsis, (Ellipsis, 1), (None, 2), True, [0, 2], (1, [0, 1])]:
        like_torch(lambda m, t, index=index: t[index], X)
    x = tw.tensor(X)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]  # as PyTorch: no negative steps (x.flip(0) reverses)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 0.0  # (it wrote the flipped selection)
    with pytest.raises(ValueError):
        x[::0]


def test_basic_indexing_result_is_a_view_that_writes_back(backend: str) -> None:
    for index in [2, (1, slice(1, 4, 2)), slice(None)]:
        x, expected = tw.tensor(X), torch.tensor(X)
        x[index].mul_(3)
        expected[index].mul_(3)
        np.testing.assert_array_equal(x.numpy(), expected.numpy())


def test_basic_indexing_of_a_leaf_requiring_grad_keeps_the_graph(backend: str) -> None:
    x = tw.tensor(X, requires_grad=True)
    whole = x[:]
    assert whole is not x and whole.requires_grad and whole.grad_fn is not None
    (whole.sum() + x[1, 2].sum()).backward()
    expected = np.ones_like(X)
    expected[1, 2] += 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)


MASK = uniform((4, 5, 3), seed=2) > 0


@pytest.mark.parametrize("value", [0, 0.0, -0.0, 2, -1.5, float("-inf"), float("nan")], ids=repr)
def test_masked_fill_with_a_number_like_torch(backend: str, value: float) -> None:
    like_torch(lambda m, t, k: t.masked_fill(k, value), X, MASK)
    grads_like_torch(lambda m, t: t.masked_fill(m.tensor(MASK), value), X)


def test_masked_fill_keeps_the_general_cases_like_torch(backend: str) -> None:
    like_torch(lambda m, t, k: t.masked_fill(k, 7), X.astype(np.int64), MASK)  # int input
    like_torch(lambda m, t, k: t.masked_fill(k, 1.5), X, MASK[:1, :, :1])  # broadcast mask
    like_torch(lambda m, t, k: t.masked_fill(k, m.tensor(2.0)), X, MASK)  # tensor value
    like_torch(lambda m, t, k: t.masked_fill(k, 3.0), np.array(1.0), np.array(True))
    like_torch(lambda m, t, k: t.masked_fill(k, 3.0), np.zeros((0, 2)), np.zeros((0, 2), bool))
    raises_like_torch(lambda m, t, k: t.masked_fill(k, 1.0), X, MASK.astype(np.int64))
    raises_like_torch(lambda m, t, k: t.masked_fill(k, 1.0), X, MASK[:, :2])


def test_masked_fill_names_its_node_like_torch(backend: str) -> None:
    x = tw.tensor(X, requires_grad=True)
    assert type(x.masked_fill(tw.tensor(MASK), 0.0).grad_fn).__name__ == "MaskedFillBackward0"


LOGP = np.log(np.random.default_rng(4).dirichlet(np.ones(6), size=8))
TARGET = np.random.default_rng(5).integers(0, 6, 8)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_without_ignored_targets_like_torch(backend: str, reduction: str) -> None:
    def loss(m: object, x: object, t: object = TARGET) -> object:
        target = t if not isinstance(t, np.ndarray) else m.tensor(t)
        return m.nn.functional.nll_loss(x, target, reduction=reduction)

    like_torch(loss, LOGP)
    grads_like_torch(loss, LOGP)
    # (C,) input, (N, C, d) input, float32
    grads_like_torch(lambda m, x: m.nn.functional.nll_loss(x, m.tensor(2), reduction=reduction),
                     LOGP[0])  # fmt: skip
    nd = LOGP.reshape(4, 2, 6).transpose(0, 2, 1)  # (4, 6, 2)
    grads_like_torch(lambda m, x: loss(m, x, TARGET.reshape(4, 2)), nd)
    like_torch(loss, LOGP.astype(np.float32))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_fast_path_equals_the_general_path_bit_for_bit(
    backend: str, reduction: str
) -> None:
    # Unit class weights take the general path; no weights (and no ignored target) the fast.
    results = []
    for weight in (None, tw.ones(6, dtype=tw.float32)):
        x = tw.tensor(LOGP.astype(np.float32), requires_grad=True)
        out = tw.nn.functional.nll_loss(x, tw.tensor(TARGET), weight=weight, reduction=reduction)
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    for fast, general in zip(*results):
        np.testing.assert_array_equal(fast, general)


IGNORED = np.where(np.isin(np.arange(8), [1, 4]), -100, TARGET)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "ignore_index, target",
    [(-100, IGNORED), (2, TARGET), (-100, np.full(8, -100))],
    ids=["some ignored", "ignore_index a class", "all ignored"],
)
def test_nll_loss_with_ignored_targets_like_torch(
    backend: str, reduction: str, ignore_index: int, target: np.ndarray
) -> None:
    def loss(m: object, x: object) -> object:
        return m.nn.functional.nll_loss(
            x, m.tensor(target), ignore_index=ignore_index, reduction=reduction
        )

    like_torch(loss, LOGP)
    grads_like_torch(loss, LOGP)


def test_nll_loss_in_half_precision_on_torch_like_torch() -> None:
    with tw.device("torch:cpu"):  # the general path (a count of targets may round there)
        like_torch(lambda m, x: m.nn.functional.nll_loss(x, m.tensor(TARGET)), LOGP,
                   dtype="float16")  # fmt: skip


def test_nll_loss_errors_like_torch(backend: str) -> None:
    def loss(target: np.ndarray, **kwargs: object) -> object:
        return lambda m, x: m.nn.functional.nll_loss(x, m.tensor(target), **kwargs)

    raises_like_torch(loss(np.where(TARGET == 0, 6, TARGET)), LOGP, match=["out of bounds"])
    raises_like_torch(loss(np.where(TARGET == 0, -1, TARGET)), LOGP, match=["out of bounds"])
    raises_like_torch(loss(TARGET.astype(np.float64)), LOGP)
    raises_like_torch(loss(TARGET[:5]), LOGP)
    raises_like_torch(loss(TARGET, reduction="avg"), LOGP)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_of_an_empty_batch_like_torch(backend: str, reduction: str) -> None:
    like_torch(
        lambda m, x: m.nn.functional.nll_loss(x, m.zeros(0, dtype=m.int64), reduction=reduction),
        np.zeros((0, 6)),
    )


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_cached_zero_scalars_keep_their_sign(backend: str, zero: float) -> None:
    x = tw.ones(3)
    for first in (0.0, -0.0, zero):  # either zero cached first must not serve the other
        (x * first).numpy()
        got = (x * zero).numpy()
        assert all(math.copysign(1, v) == math.copysign(1, zero) for v in got)
    like_torch(lambda m, t: t * zero, np.ones(3))
    like_torch(lambda m, t: 1 / (t * zero), np.ones(3))


def test_cached_complex_zeros_keep_their_signs(backend: str) -> None:
    for zero in (complex(0.0, -0.0), complex(-0.0, 0.0), complex(0.0, 0.0)):
        like_torch(lambda m, t, z=zero: t * z, np.ones(2, np.complex128))


@pytest.mark.parametrize(
    "a, b", [((3, 1), (1, 4)), ((2, 3), (2, 3)), ((), (5,)), ((4,), ()), ((0, 1), (3,))]
)
def test_broadcasting_two_shapes_like_torch(backend: str, a: tuple, b: tuple) -> None:
    assert tw.broadcast_shapes(a, b) == torch.broadcast_shapes(a, b)
    like_torch(lambda m, x, y: x + y, np.ones(a), np.ones(b))


def test_broadcasting_errors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, x, y: x + y, np.ones((2, 3)), np.ones((3, 2)), match=["3", "2"])


@pytest.mark.parametrize("shape", [(7,), (300, 200), (3, 0)])
def test_add_alpha_of_one_pair_on_torch_matches_torch_bit_for_bit(shape: tuple) -> None:
    # torch's fused kernel (NumPy's mul then add rounds twice: tests/tensor/
    # test_add_alpha_inplace.py compares it with the core's general path).
    p, g = uniform(shape, seed=6).astype(np.float32), uniform(shape, seed=7).astype(np.float32)
    ours, theirs = tw.tensor(p, device="torch:cpu"), torch.tensor(p)
    with tw.no_grad():
        ours.data.add_(tw.tensor(g, device="torch:cpu"), alpha=-20.0)
        ours.sub_(tw.tensor(g, device="torch:cpu"), alpha=0.5)
    theirs.data.add_(torch.tensor(g), alpha=-20.0)
    theirs.sub_(torch.tensor(g), alpha=0.5)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("first", [True, False], ids=["number first", "number second"])
def test_where_with_a_number_like_torch(backend: str, first: bool) -> None:
    def pick(m: object, t: object, k: object) -> object:
        return m.where(k, -0.0, t) if first else m.where(k, t, 2)

    like_torch(pick, X, MASK)
    grads_like_torch(lambda m, t: pick(m, t, m.tensor(MASK)), X)
    like_torch(pick, X, MASK[:, :1])  # a broadcast condition: the general path
    like_torch(pick, X.astype(np.int64), MASK)  # an int tensor: the number keeps its dtype
    like_torch(lambda m, t, k: m.where(k, 1.5, t), X.astype(np.int64), MASK)  # promotes
