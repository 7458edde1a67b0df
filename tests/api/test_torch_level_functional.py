"""``tw.conv2d``, ``tw.dropout``, ``tw.layer_norm``, ...: PyTorch's top-level spellings of
nn.functional ops, called positionally with torch's signatures, against torch (values in
float64, gradients against torch's autograd) on numpy and torch:cpu."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

sys.path.insert(0, str(Path(__file__).parent.parent / "tensor"))
from gradcheck import gradcheck  # noqa: E402
from tensor_reference import grads_like_torch, like_torch, raises_like_torch  # noqa: E402


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest):
    with entered(request.param) as spec:
        yield spec


rng = np.random.default_rng(0)
X = rng.standard_normal((2, 4, 6))
IMG = rng.standard_normal((2, 4, 4, 4))
W1 = rng.standard_normal((3, 4, 3))
W2 = rng.standard_normal((3, 4, 3, 3))
B3 = rng.standard_normal(3)
C4 = rng.standard_normal(4)
V = rng.standard_normal((5, 4))
T = rng.standard_normal((5, 4))
Y = np.sign(rng.standard_normal(5))
P = rng.uniform(0.1, 1.0, (5, 4))

# name -> (call with torch's positional signature, its arrays)
CASES = {
    "conv1d": (lambda m, x, w, b: m.conv1d(x, w, b, 2, 1, 1, 1), (X, W1, B3)),
    "conv2d": (lambda m, x, w, b: m.conv2d(x, w, b, 1, 1), (IMG, W2, B3)),
    "conv_transpose1d": (
        lambda m, x, w: m.conv_transpose1d(x, w.transpose(0, 1), None, 2, 1, 1),
        (X, W1),
    ),
    "layer_norm": (
        lambda m, x, w, b: m.layer_norm(x, (6,), w, b, 1e-5, True),
        (X, *rng.standard_normal((2, 6))),
    ),
    "group_norm": (lambda m, x, w, b: m.group_norm(x, 2, w, b, 1e-5, True), (X, C4, C4)),
    "batch_norm": (
        lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
        (X, C4, C4),
    ),
    "instance_norm": (
        lambda m, x, w, b: m.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
        (X, C4, C4),
    ),
    "rms_norm": (lambda m, x, w: m.rms_norm(x, [6], w, 1e-6), (X, np.ones(6))),
    "threshold": (lambda m, x: m.threshold(x, 0.1, -2.0), (X,)),
    "celu": (lambda m, x: m.celu(x, 0.7), (X,)),
    "selu": (lambda m, x: m.selu(x), (X,)),
    "rrelu": (lambda m, x: m.rrelu(x, 0.1, 0.3), (X,)),
    "prelu": (lambda m, x, w: m.prelu(x, w), (X, C4)),
    "hardshrink": (lambda m, x: m.hardshrink(x, 0.6), (X,)),
    "pixel_shuffle": (lambda m, x: m.pixel_shuffle(x, 2), (IMG,)),
    "pixel_unshuffle": (lambda m, x: m.pixel_unshuffle(x, 2), (IMG,)),
    "channel_shuffle": (lambda m, x: m.channel_shuffle(x, 2), (IMG,)),
    "cosine_similarity": (lambda m, a, b: m.cosine_similarity(a, b, 0), (V, T)),
    "pairwise_distance": (lambda m, a, b: m.pairwise_distance(a, b, 1.5, 1e-6, True), (V, T)),
    "bce_with_logits": (
        lambda m, a, b: m.binary_cross_entropy_with_logits(a, b, m.tensor(C4), m.tensor(C4), 2),
        (V, P),
    ),
    "kl_div": (lambda m, a, b: m.kl_div(a, b, 1), (V, P)),
    "kl_div_log_target": (lambda m, a, b: m.kl_div(a, b.log(), 0, log_target=True), (V, P)),
    "cosine_embedding_loss": (
        lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.2, 0),
        (V, T, Y),
    ),
    "hinge_embedding_loss": (lambda m, a, y: m.hinge_embedding_loss(a, y, 0.5, 2), (V, P)),
    "margin_ranking_loss": (
        lambda m, a, b, y: m.margin_ranking_loss(a[:, 0], b[:, 0], y, 0.1, 1),
        (V, T, Y),
    ),
    "poisson_nll_loss": (lambda m, a, b: m.poisson_nll_loss(a, b, True, True, 1e-8, 1), (V, P)),
    "triplet_margin_loss": (
        lambda m, a, p, n: m.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, 0),
        (V, T, P),
    ),
    "bilinear": (
        lambda m, a, b, w: m.bilinear(a, b, w),
        (V, T, rng.standard_normal((3, 4, 4))),
    ),
    "max_pool1d": (lambda m, x: m.max_pool1d(x, 2), (X,)),
    "max_pool1d_with_indices": (lambda m, x: m.max_pool1d_with_indices(x, 3, 2, 1), (X,)),
    "max_pool2d": (lambda m, x: m.max_pool2d(x, [2, 2], [], 1, 1, True), (IMG,)),
    "max_pool3d": (lambda m, x: m.max_pool3d(x, 2), (IMG,)),
    "avg_pool1d": (lambda m, x: m.avg_pool1d(x, 3, 2, 1, True, False), (X,)),
    "adaptive_avg_pool1d": (lambda m, x: m.adaptive_avg_pool1d(x, 4), (X,)),
    "adaptive_max_pool1d": (lambda m, x: m.adaptive_max_pool1d(x, 4), (X,)),
    "constant_pad_nd": (lambda m, x: m.constant_pad_nd(x, [1, 2, 0, 1], 0.5), (X,)),
    "dropout_eval": (lambda m, x: m.dropout(x, 0.5, False), (X,)),
    "feature_dropout_eval": (lambda m, x: m.feature_dropout(x, 0.5, False), (X,)),
    "convolution": (
        lambda m, x, w, b: m.convolution(x, w, b, [1, 2], [1, 0], [2, 1], False, [0, 0], 1),
        (IMG, W2, B3),
    ),
    "convolution_transposed": (
        lambda m, x, w: m.convolution(x, w.transpose(0, 1), None, [2], [1], [1], True, [1], 1),
        (X, W1),
    ),
    "grid_sampler": (
        lambda m, x, g: m.grid_sampler(x, g.tanh(), 0, 1, True),
        (IMG, rng.standard_normal((2, 3, 5, 2))),
    ),
    "grid_sampler_nearest": (
        lambda m, x, g: m.grid_sampler(x, g.tanh(), 1, 0, False),
        (IMG, rng.standard_normal((2, 3, 5, 2))),
    ),
    "affine_grid_generator": (
        lambda m, t: m.affine_grid_generator(t, [2, 3, 4, 5], False),
        (rng.standard_normal((2, 2, 3)),),
    ),
    "alpha_dropout_eval": (lambda m, x: m.alpha_dropout(x, 0.5, False), (X,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_like_torch(backend: str, name: str) -> None:
    fn, arrays = CASES[name]
    like_torch(fn, *arrays, dtype="float64")


# (not celu: torch's own float64 gradient differs from the exact exp(x / alpha) by ~1e-8
# relative, so ours is checked by finite differences below; not batch_norm: its input
# gradient here cancels to ~1e-5, where both libraries' rounding exceeds 1e-12 relative.)
GRADS = ["conv1d", "layer_norm", "group_norm", "prelu", "bce_with_logits", "kl_div"]
GRADS += ["triplet_margin_loss", "max_pool2d", "constant_pad_nd", "cosine_similarity"]
GRADS += ["convolution", "convolution_transposed", "grid_sampler", "affine_grid_generator"]


@pytest.mark.parametrize("name", GRADS)
def test_gradients_like_torch(backend: str, name: str) -> None:
    fn, arrays = CASES[name]
    grads_like_torch(fn, *arrays)


def test_celu_gradient_by_finite_differences(backend: str) -> None:
    gradcheck(lambda x: tw.celu(x, 0.7), X)


def test_embedding_takes_the_table_first(backend: str) -> None:
    table, rows = rng.standard_normal((6, 3)), np.array([[0, 2], [5, 2]])
    for padding in (-1, 2):
        like_torch(lambda m, w, i, p=padding: m.embedding(w, i, p), table, rows, dtype=None)
        grads_like_torch(lambda m, w, p=padding: m.embedding(w, m.tensor(rows), p), table)


def test_dropout_has_no_defaults_and_drops_when_training(backend: str) -> None:
    raises_like_torch(lambda m, x: m.dropout(x), X, dtype="float64")
    x = tw.tensor(X)
    assert (tw.dropout(x, 1.0, True) == 0).all()
    kept = tw.dropout(x, 0.5, True)
    both = (kept == 0) | (kept - 2 * x).abs().lt(1e-12)
    assert both.all() and 0 < int((kept == 0).sum()) < x.numel()
    y = tw.tensor(X)
    assert tw.dropout_(y, 1.0, True) is y and (y == 0).all()
    kinds = ("", "alpha_", "feature_", "feature_alpha_")
    for name in [f"{kind}dropout{tail}" for kind in kinds for tail in ("", "_")]:
        for p, train in ((1.5, True), (-0.1, True), (1.5, False)):  # ATen's RuntimeError
            raises_like_torch(
                lambda m, x, f=name, p=p, t=train: getattr(m, f)(x, p, t), X, match=["between"]
            )


def test_feature_dropout_drops_whole_channels(backend: str) -> None:
    x = tw.ones(40, 30, 3, 2)
    out = tw.feature_dropout(x, 0.25, True)
    per_channel = out.reshape(40, 30, -1)
    kept = per_channel[:, :, 0] != 0
    assert tw.equal(per_channel != 0, kept.unsqueeze(-1).expand(40, 30, 6))
    assert abs(kept.float().mean().item() - 0.75) < 0.06
    assert tw.allclose(out[out != 0], tw.full((1,), 1 / 0.75))
    raises_like_torch(lambda m, y: m.feature_dropout(y, 1.5, True), X, match=["between"])
    raises_like_torch(lambda m, y: m.feature_dropout(y[0, 0], 0.5, True), X, match=["2 dim"])
    y = tw.ones(3, 4)
    assert tw.feature_dropout_(y, 1.0, True) is y and not y.any()


def test_grid_sampler_refuses_unknown_codes() -> None:
    # (PyTorch reads past its enums and returns arbitrary values)
    x, g = tw.tensor(IMG), tw.zeros(2, 1, 1, 2, dtype=tw.float64)
    for codes in ((0, 3), (3, 0)):
        with pytest.raises(RuntimeError, match="interpolation_mode"):
            tw.grid_sampler(x, g, *codes, True)


def test_in_place_spellings_change_their_input(backend: str) -> None:
    for name, args in (("threshold_", (0.0, 9.0)), ("celu_", (0.5,)), ("selu_", ())):
        ours, theirs = tw.tensor(X), torch.tensor(X)
        assert getattr(tw, name)(ours, *args) is ours
        getattr(torch, name)(theirs, *args)
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-12)


def test_integer_reduction_codes() -> None:
    raises_like_torch(lambda m, a, b: m.kl_div(a, b, "mean"), V, P, dtype="float64")
    with pytest.raises(TypeError, match="kl_div"):
        tw.kl_div(tw.tensor(V), tw.tensor(P), 3)
