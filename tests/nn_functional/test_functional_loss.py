"""Losses and cosine_similarity against torch.nn.functional in float64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import check, gradcheck, randn

REDUCTIONS = ["mean", "sum", "none"]
rng = np.random.default_rng(0)


def classes(*shape: int, n: int, ignore: int | None = None) -> np.ndarray:
    t = rng.integers(0, n, size=shape)
    if ignore is not None:
        t.flat[::3] = ignore
    return t


def probabilities(*shape: int) -> np.ndarray:
    p = rng.random(shape) + 0.05
    return p / p.sum(1, keepdims=True)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("weighted", [False, True])
def test_mse_l1(backend: str, name: str, reduction: str, weighted: bool) -> None:
    arrays = [randn(3, 4), randn(3, 4, seed=1)]
    if weighted:
        check(
            lambda F, x, y, w: getattr(F, name)(x, y, reduction=reduction, weight=w),
            *arrays,
            rng.random((3, 4)),
            grad=(0, 1),
        )
    else:
        check(lambda F, x, y: getattr(F, name)(x, y, reduction=reduction), *arrays)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.3, 0.0])
def test_smooth_l1(backend: str, reduction: str, beta: float) -> None:
    check(
        lambda F, x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=beta),
        randn(4, 5),
        randn(4, 5, seed=1),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.4])
@pytest.mark.parametrize("weighted", [False, True])
def test_huber(backend: str, reduction: str, delta: float, weighted: bool) -> None:
    arrays = [randn(4, 5), randn(4, 5, seed=1)]
    if weighted:
        check(
            lambda F, x, y, w: F.huber_loss(x, y, reduction=reduction, delta=delta, weight=w),
            *arrays,
            rng.random((4, 5)),
            grad=(0, 1),
        )
    else:
        check(lambda F, x, y: F.huber_loss(x, y, reduction=reduction, delta=delta), *arrays)


def test_broadcast_target_warns(backend: str) -> None:
    with pytest.warns(UserWarning, match="different to the input size"):
        check(lambda F, x, y: F.mse_loss(x, y), randn(3, 4), randn(4, seed=1))


@pytest.mark.parametrize(
    ("size_average", "reduce"), [(None, False), (False, None), (True, True), (False, True)]
)
def test_legacy_reduction_arguments(backend: str, size_average, reduce) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both libraries warn: ours is checked below
        check(
            lambda F, x, y: F.l1_loss(x, y, size_average=size_average, reduce=reduce),
            randn(3, 4),
            randn(3, 4, seed=1),
        )
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        tw.nn.functional.l1_loss(tw.ones(2), tw.zeros(2), size_average=size_average, reduce=reduce)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("input_shape", "target_shape"),
    [((5, 4), (5,)), ((4,), ()), ((2, 3, 4, 2), (2, 4, 2)), ((3, 4, 5), (3, 5))],
)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_and_nll_class_indices(
    backend: str,
    reduction: str,
    input_shape: tuple,
    target_shape: tuple,
    weighted: bool,
    ignore: bool,
) -> None:
    n = input_shape[0] if len(input_shape) == 1 else input_shape[1]
    x = randn(*input_shape, scale=2)
    t = classes(*target_shape, n=n, ignore=3 if ignore and target_shape else None)
    extra = {"ignore_index": 3} if ignore else {}
    arrays = [x, t] + ([rng.random(n) + 0.5] if weighted else [])
    for smoothing in (0.0, 0.2):

        def ce(F, x, t, *w, smoothing=smoothing):
            return F.cross_entropy(
                x, t, *w, reduction=reduction, label_smoothing=smoothing, **extra
            )

        check(ce, *arrays, grad=(0,))
    check(
        lambda F, x, t, *w: F.nll_loss(
            F.log_softmax(x, -1 if x.dim() == 1 else 1), t, *w, reduction=reduction, **extra
        ),
        *arrays,
        grad=(0,),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probability_targets(
    backend: str, reduction: str, shape: tuple, weighted: bool, smoothing: float
) -> None:
    n = shape[1] if len(shape) > 1 else shape[0]
    t = probabilities(*shape) if len(shape) > 1 else probabilities(1, n)[0]
    arrays = [randn(*shape, scale=2), t] + ([rng.random(n) + 0.5] if weighted else [])
    check(
        lambda F, x, t, *w: F.cross_entropy(
            x, t, *w, reduction=reduction, label_smoothing=smoothing
        ),
        *arrays,
        grad=(0, 1),
    )


def test_nll_all_targets_ignored_gives_nan_like_torch(backend: str) -> None:
    check(
        lambda F, x, t: F.nll_loss(x, t, ignore_index=1),
        randn(3, 4),
        np.array([1, 1, 1]),
        grad=(),
    )


def test_cross_entropy_rejects_out_of_range_target(backend: str) -> None:
    with pytest.raises(IndexError, match=r"targets must lie in \[0, 4\)"):
        tw.nn.functional.cross_entropy(tw.zeros(2, 4), tw.tensor([1, 4]))


def test_cross_entropy_rejects_bad_target_shape(backend: str) -> None:
    with pytest.raises(ValueError, match=r"expected integer class targets of shape \(2,\)"):
        tw.nn.functional.cross_entropy(tw.zeros(2, 4), tw.tensor([1, 2, 0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (3, 4), (4,)])
def test_binary_cross_entropy(backend: str, reduction: str, weight_shape) -> None:
    p = rng.random((3, 4)) * 0.9 + 0.05
    t = rng.random((3, 4))
    arrays = [p, t] + ([rng.random(weight_shape)] if weight_shape else [])
    check(
        lambda F, p, t, *w: F.binary_cross_entropy(p, t, *w, reduction=reduction),
        *arrays,
        grad=(0, 1),
    )


def test_binary_cross_entropy_clamps_log_at_minus_100(backend: str) -> None:
    check(
        lambda F, p, t: F.binary_cross_entropy(p, t, reduction="none"),
        np.array([0.0, 1.0, 0.5]),
        np.array([1.0, 0.0, 1.0]),
        grad=(),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits(
    backend: str, reduction: str, weighted: bool, pos_weighted: bool
) -> None:
    x = randn(3, 4, scale=30)  # large logits: the stable form must not overflow
    t = rng.random((3, 4))
    w = rng.random((3, 4)) if weighted else None
    pw = rng.random(4) * 3 if pos_weighted else None

    def fn(F, x, t, w, pw):
        return F.binary_cross_entropy_with_logits(
            x,
            t,
            weight=w if weighted else None,
            reduction=reduction,
            pos_weight=pw if pos_weighted else None,
        )

    check(
        fn,
        x,
        t,
        rng.random((3, 4)) if w is None else w,
        rng.random(4) if pw is None else pw,
        grad=(0, 1),
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.filterwarnings("ignore:.*reduction.*'mean' divides the total loss")
def test_kl_div(backend: str, reduction: str, log_target: bool) -> None:
    logp = np.log(probabilities(3, 5))
    q = probabilities(3, 5)
    q[0, 0] = 0.0  # xlogy(0, 0) = 0
    target = np.log(probabilities(3, 5)) if log_target else q
    check(
        lambda F, x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
        logp,
        target,
        grad=(0,),
    )


def test_kl_div_mean_warns(backend: str) -> None:
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        tw.nn.functional.kl_div(tw.zeros(2, 3), tw.ones(2, 3) / 3)


@pytest.mark.parametrize(
    ("shape1", "shape2", "dim"), [((4, 5), (4, 5), 1), ((3, 4, 5), (4, 5), -1), ((6,), (6,), 0)]
)
def test_cosine_similarity(backend: str, shape1: tuple, shape2: tuple, dim: int) -> None:
    check(
        lambda F, a, b: F.cosine_similarity(a, b, dim=dim), randn(*shape1), randn(*shape2, seed=3)
    )


def test_gradcheck_cross_entropy(backend: str) -> None:
    w = tw.tensor(rng.random(4) + 0.5)  # (a constant: PyTorch's nll refuses a weight needing grad)
    gradcheck(
        lambda F, x: F.cross_entropy(x, tw.tensor([0, 2, 1]), weight=w, label_smoothing=0.1),
        randn(3, 4),
    )


def test_gradcheck_bce_with_logits(backend: str) -> None:
    gradcheck(
        lambda F, x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=tw.tensor([2.0, 0.5])),
        randn(3, 2),
        rng.random((3, 2)),
    )
