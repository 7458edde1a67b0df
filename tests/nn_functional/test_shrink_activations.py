"""Shrinkage and thresholding activations, ``rrelu``, the in-place ``*_`` functional variants,
``gumbel_softmax`` and alpha dropout against PyTorch in float64: outputs and gradients where
deterministic; seeding, ranges and the straight-through gradient where random."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from functional_reference import assert_close, check, gradcheck, randn
from tw_backends import entered

# Values on the thresholds and at 0, where the branches meet.
EDGES = np.array([-2.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, np.nan, np.inf, -np.inf])

DETERMINISTIC = {
    "threshold": lambda F, x: F.threshold(x, 0.25, -3.0),
    "hardshrink": lambda F, x: F.hardshrink(x),
    "hardshrink_lambd": lambda F, x: F.hardshrink(x, lambd=0.25),
    "softshrink": lambda F, x: F.softshrink(x),
    "softshrink_lambd": lambda F, x: F.softshrink(x, 0.25),
    "tanhshrink": lambda F, x: F.tanhshrink(x),
    "rrelu_eval": lambda F, x: F.rrelu(x, 0.1, 0.3),
    "celu": lambda F, x: F.celu(x, alpha=0.5),
    "selu": lambda F, x: F.selu(x),
    "glu": lambda F, x: F.glu(x, 1),
}


@pytest.mark.parametrize("name", list(DETERMINISTIC))
def test_matches_torch(backend: str, name: str) -> None:
    check(DETERMINISTIC[name], randn(3, 4, 5))


@pytest.mark.parametrize("name", [n for n in DETERMINISTIC if n != "glu"])
def test_edges_match_torch(backend: str, name: str) -> None:
    # NaN and infinities in the values; gradients on the finite edges.
    check(DETERMINISTIC[name], EDGES, grad=())
    check(DETERMINISTIC[name], EDGES[:7])


@pytest.mark.parametrize("name", ["softshrink", "tanhshrink", "celu"])
def test_gradients_match_finite_differences(backend: str, name: str) -> None:
    gradcheck(DETERMINISTIC[name], randn(3, 5))


INPLACE = {
    "relu_": lambda F, x: F.relu_(x),
    "elu_": lambda F, x: F.elu_(x, 0.7),
    "leaky_relu_": lambda F, x: F.leaky_relu_(x, 0.2),
    "hardtanh_": lambda F, x: F.hardtanh_(x, -0.5, 0.8),
    "celu_": lambda F, x: F.celu_(x, 1.5),
    "selu_": lambda F, x: F.selu_(x),
    "threshold_": lambda F, x: F.threshold_(x, 0.1, 20.0),
    "rrelu_": lambda F, x: F.rrelu_(x, 0.2, 0.4),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_variants_write_into_their_input(backend: str, name: str) -> None:
    x = randn(4, 5)
    results = []
    for lib, F in ((tw, twF), (torch, torchF)):
        leaf = lib.tensor(x, requires_grad=True)
        y = leaf * 2  # a non-leaf, which in-place ops may overwrite
        out = INPLACE[name](F, y)
        assert out is y
        (y * lib.tensor(x)).sum().backward()
        results.append((y, leaf.grad))
    (ours, ours_grad), (theirs, theirs_grad) = results
    assert_close(ours, theirs)
    assert_close(ours_grad, theirs_grad)


def test_rrelu_training_draws_seeded_slopes_in_range(backend: str) -> None:
    x = tw.tensor(randn(200, 50), requires_grad=True)
    tw.manual_seed(3)
    out = twF.rrelu(x, 0.1, 0.3, training=True)
    tw.manual_seed(3)
    again = twF.rrelu(x, 0.1, 0.3, training=True)
    assert_close(out, again)
    xs, ys = x.detach().numpy(), out.detach().numpy()
    np.testing.assert_array_equal(ys[xs > 0], xs[xs > 0])
    slopes = ys[xs < 0] / xs[xs < 0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005 and slopes.std() > 0.05  # uniform, not constant
    out.sum().backward()  # the gradient is the drawn slope (1 for positive inputs)
    np.testing.assert_allclose(x.grad.numpy(), np.where(xs > 0, 1.0, ys / xs))


def test_rrelu_checks_its_bounds(backend: str) -> None:
    with pytest.raises(RuntimeError):
        torchF.rrelu(torch.ones(2), 0.5, 0.2, training=True)
    with pytest.raises(RuntimeError, match="lower bound"):
        twF.rrelu(tw.ones(2), 0.5, 0.2, training=True)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda F, x: F.celu(x, alpha=0.0), "alpha cannot be 0"),
        (lambda F, x: F.softshrink(x, -1.0), "non-negative"),
        (lambda F, x: F.glu(x[:, :3], 1), "even"),
        (lambda F, x: F.glu(x[0, 0], 0), "even"),
    ],
)
def test_bad_arguments_raise(call, match: str) -> None:
    x = randn(2, 4)
    with pytest.raises(RuntimeError):
        call(torchF, torch.tensor(x))
    with pytest.raises(RuntimeError, match=match):
        call(twF, tw.tensor(x))


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax(backend: str, hard: bool, dim: int) -> None:
    logits = tw.tensor(randn(6, 5), requires_grad=True)
    tw.manual_seed(11)
    y = twF.gumbel_softmax(logits, tau=0.5, hard=hard, dim=dim)
    tw.manual_seed(11)
    soft = twF.gumbel_softmax(logits, tau=0.5, dim=dim)
    values = y.detach().numpy()
    np.testing.assert_allclose(values.sum(dim), 1.0, rtol=1e-12)
    if hard:
        assert set(np.unique(values)) <= {0.0, 1.0}
        np.testing.assert_array_equal(values.argmax(dim), soft.detach().numpy().argmax(dim))
    weights = tw.tensor(randn(6, 5, seed=1))
    grads = [tw.autograd.grad((t * weights).sum(), logits)[0].numpy() for t in (y, soft)]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)  # straight-through


def test_gumbel_softmax_samples_follow_the_softmax(backend: str) -> None:
    # The argmax of logits + Gumbel noise is distributed as softmax(logits).
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    tw.manual_seed(0)
    y = twF.gumbel_softmax(tw.tensor(np.tile(logits, (4000, 1))), hard=True)
    freq = y.numpy().mean(0)
    np.testing.assert_allclose(freq, [0.5, 0.3, 0.2], atol=0.03)
    with pytest.warns(UserWarning, match="eps"):
        twF.gumbel_softmax(tw.tensor(logits), eps=1e-3)


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout(backend: str, fn: str) -> None:
    x = randn(400, 30, 4)
    dropped = getattr(twF, fn)
    assert_close(dropped(tw.tensor(x), 0.3), x)  # training=False by default, as PyTorch
    assert_close(dropped(tw.tensor(x), 0.0, training=True), x)
    np.testing.assert_array_equal(dropped(tw.tensor(x), 1.0, training=True).numpy(), 0.0)
    tw.manual_seed(5)
    out = dropped(tw.tensor(x), 0.3, training=True).numpy()
    tw.manual_seed(5)
    np.testing.assert_array_equal(dropped(tw.tensor(x), 0.3, training=True).numpy(), out)
    # PyTorch's affine map: kept a * x + alpha * a * p, dropped -alpha * a * (1 - p).
    alpha, p = 1.7580993408473766, 0.3
    a = 1 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    drop_value = -alpha * a * (1 - p)
    kept = ~np.isclose(out, drop_value)
    np.testing.assert_allclose(out[kept], a * x[kept] + alpha * a * p, rtol=1e-12)
    assert abs(kept.mean() - 0.7) < 0.03
    if fn == "feature_alpha_dropout":  # whole channels at once
        assert np.all(kept.all(-1) | ~kept.any(-1))
    # SELU-normalised input keeps zero mean and unit variance.
    z = randn(200000)
    tw.manual_seed(1)
    y = twF.alpha_dropout(tw.tensor(z), 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02


def test_alpha_dropout_errors() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        twF.alpha_dropout(tw.ones(3), 1.5)
    with pytest.raises(RuntimeError):
        torchF.feature_alpha_dropout(torch.ones(3), 0.5, True)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        twF.feature_alpha_dropout(tw.ones(3), 0.5, True)


def test_float32_stays_float32(backend: str) -> None:
    x = randn(3, 4).astype(np.float32)
    for fn in DETERMINISTIC.values():
        ours = fn(twF, tw.tensor(x))
        assert ours.dtype is tw.float32
        assert_close(ours, fn(torchF, torch.tensor(x)), rtol=1e-5, atol=1e-6)


def test_on_cunumeric() -> None:
    with entered("cunumeric"):
        check(DETERMINISTIC["softshrink"], randn(3, 4))
        check(DETERMINISTIC["threshold"], randn(3, 4))
