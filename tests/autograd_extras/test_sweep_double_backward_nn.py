"""The higher-order autograd sweep of ``test_sweep_double_backward.py`` over nn.functional:
losses, activations, norms, convolutions, pools, interpolation, attention and the rest, in
float64 against PyTorch (double backward in both directions, gradgradcheck for a share)."""

from __future__ import annotations

from typing import Any

import pytest
from test_sweep_double_backward import (
    Case,
    away,
    check_case,
    check_loss_flags,
    finite_differences,
    fixed,
    params,
    positive,
)


def F(m: Any) -> Any:  # noqa: N802 - reads as the usual ``F.``
    return m.nn.functional


def _long(m: Any, values: list) -> Any:
    return m.tensor(values, dtype=m.int64)


def _probs(m: Any, values: list) -> Any:
    return m.tensor(values, dtype=m.float64)


TARGET = [0, 2, 1, 2]
W = [0.5, 2.0, 1.5]
SIGNS = [[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, -1.0], [-1.0, 1.0, 1.0]]
SOFT = [[0.2, 0.3, 0.5], [0.1, 0.8, 0.1], [0.6, 0.2, 0.2], [0.3, 0.3, 0.4]]
B = (4, 3)
IMG = (2, 2, 5, 5)
SMALL = (1, 1, 4, 4)  # for the cases finite differences check too

ACTIVATIONS = {
    "gelu": lambda m, x: F(m).gelu(x),
    "gelu_tanh": lambda m, x: F(m).gelu(x, approximate="tanh"),
    "silu": lambda m, x: F(m).silu(x),
    "mish": lambda m, x: F(m).mish(x),
    "elu": lambda m, x: F(m).elu(x, 0.7),
    # alpha 0.5: torch computes 1 / alpha in float32 (0.7 would be off by 3e-8)
    "celu": lambda m, x: F(m).celu(x, 0.5),
    "selu": lambda m, x: F(m).selu(x),
    "softplus": lambda m, x: F(m).softplus(x),
    "softplus_beta": lambda m, x: F(m).softplus(x, beta=2.0, threshold=1.5),
    "leaky_relu": lambda m, x: F(m).leaky_relu(x, 0.2),
    "hardtanh": lambda m, x: F(m).hardtanh(x, -1.2, 1.2),
    "relu6": lambda m, x: F(m).relu6(x * 4),
    "hardswish": lambda m, x: F(m).hardswish(x * 2),
    "logsigmoid": lambda m, x: F(m).logsigmoid(x),
    "tanhshrink": lambda m, x: F(m).tanhshrink(x),
    "softsign": lambda m, x: F(m).softsign(x),
    "softshrink": lambda m, x: F(m).softshrink(x, 0.7),
    "hardshrink": lambda m, x: F(m).hardshrink(x, 0.7),
    "threshold": lambda m, x: F(m).threshold(x, 0.6, -1.0),
    "glu": lambda m, x: F(m).glu(x, 1),
    "prelu": lambda m, x: F(m).prelu(x, m.tensor([0.25], dtype=m.float64)),
    "rrelu_eval": lambda m, x: F(m).rrelu(x, training=False),
}
FD_ACTIVATIONS = {"gelu", "silu", "mish", "elu", "softplus", "logsigmoid"}


def _conv(name: str, **kw: Any):
    return lambda m, x, w, b: getattr(F(m), name)(x, w, b, **kw)


NN_CASES: list[Case] = [
    *(Case(n, fn, away((3, 4)), fd=n in FD_ACTIVATIONS) for n, fn in ACTIVATIONS.items()),
    Case("elu_at_zero", lambda m, x: F(m).elu(x, 0.7), fixed([0.0, -1.0, 1.0])),
    Case("softmax", lambda m, x: F(m).softmax(x, 1), away(B)),
    Case("log_softmax", lambda m, x: F(m).log_softmax(x, 1), away(B)),
    Case("softmin", lambda m, x: F(m).softmin(x, 0), away(B)),
    Case("normalize", lambda m, x: F(m).normalize(x, dim=1), away(B), fd=True),
    # losses
    Case("cross_entropy", lambda m, x: F(m).cross_entropy(x, _long(m, TARGET)), away(B), fd=True),
    Case(
        "cross_entropy_weight_ignore",
        lambda m, x: F(m).cross_entropy(x, _long(m, TARGET), _probs(m, W), ignore_index=1),
        away(B),
    ),
    Case(
        "cross_entropy_smoothing",
        lambda m, x: F(m).cross_entropy(x, _long(m, TARGET), _probs(m, W), label_smoothing=0.2),
        away(B),
        fd=True,
    ),
    Case(
        "cross_entropy_probs",
        lambda m, x: F(m).cross_entropy(x, _probs(m, SOFT), label_smoothing=0.1),
        away(B),
    ),
    Case(
        "cross_entropy_sum_4d",
        lambda m, x: F(m).cross_entropy(x, _long(m, [[[0, 2], [1, 1]]]), reduction="sum"),
        away((1, 3, 2, 2)),
    ),
    Case(
        "nll_loss_weight",
        lambda m, x: F(m).nll_loss(F(m).log_softmax(x, 1), _long(m, TARGET), _probs(m, W)),
        away(B),
    ),
    Case("mse", lambda m, x, y: F(m).mse_loss(x, y), away(B, B), fd=True),
    Case("l1", lambda m, x, y: F(m).l1_loss(x * x, y), away(B, B)),
    Case("smooth_l1", lambda m, x, y: F(m).smooth_l1_loss(x, y, beta=0.5), away(B, B), fd=True),
    Case("huber", lambda m, x, y: F(m).huber_loss(x, y, delta=0.8), away(B, B)),
    Case(
        "bce",
        lambda m, x, y: F(m).binary_cross_entropy(m.sigmoid(x), m.sigmoid(y)),
        away(B, B),
        fd=True,
    ),
    Case(
        "bce_weight",
        lambda m, p, y: F(m).binary_cross_entropy(p, y, _probs(m, SOFT)),
        positive(B, B, low=0.1, high=0.9),
    ),
    Case(
        "bce_with_logits",
        lambda m, x, y: F(m).binary_cross_entropy_with_logits(
            x, m.sigmoid(y), _probs(m, SOFT), pos_weight=_probs(m, W)
        ),
        away(B, B),
        fd=True,
    ),
    Case(
        "kl_div",
        lambda m, x, y: F(m).kl_div(
            F(m).log_softmax(x, 1), F(m).softmax(y, 1), reduction="batchmean"
        ),
        away(B, B),
        fd=True,
    ),
    Case(
        "kl_div_log_target",
        lambda m, x, y: F(m).kl_div(x, y, reduction="sum", log_target=True),
        away(B, B),
    ),
    Case("poisson_nll", lambda m, x, y: F(m).poisson_nll_loss(x, y * y), away(B, B)),
    Case(
        "gaussian_nll",
        lambda m, x, y, v: F(m).gaussian_nll_loss(x, y, v * v),
        away(B, B, B),
    ),
    Case("soft_margin", lambda m, x: F(m).soft_margin_loss(x, _probs(m, SIGNS)), away(B)),
    Case(
        "margin_ranking",
        lambda m, x, y: F(m).margin_ranking_loss(x, y, m.sign(x + y), margin=0.1),
        away((5,), (5,)),
    ),
    Case("cosine_similarity", lambda m, x, y: F(m).cosine_similarity(x, y), away(B, B), fd=True),
    Case("pairwise_distance", lambda m, x, y: F(m).pairwise_distance(x, y), away(B, B), fd=True),
    Case("cdist", lambda m, x, y: m.cdist(x, y), away((3, 2), (4, 2)), beyond_torch=True),
    # norms
    Case(
        "layer_norm",
        lambda m, x, w, b: F(m).layer_norm(x, (3,), w, b),
        away(B, (3,), (3,)),
        third=False,  # torch's third derivative of the norms is wrong: see the fixes file
        fd=True,
    ),
    Case("layer_norm_plain", lambda m, x: F(m).layer_norm(x, (4, 3)), away(B), third=False),
    Case("rms_norm", lambda m, x, w: F(m).rms_norm(x, (3,), w), away(B, (3,)), fd=True),
    Case(
        "batch_norm_train",
        lambda m, x, w, b: F(m).batch_norm(x, None, None, w, b, training=True),
        away((4, 3, 2), (3,), (3,)),
        third=False,
        fd=True,
    ),
    Case(
        "batch_norm_eval",
        lambda m, x, w, b: F(m).batch_norm(
            x, m.ones(3, dtype=m.float64) * 0.5, m.ones(3, dtype=m.float64) * 2, w, b
        ),
        away((4, 3), (3,), (3,)),
    ),
    Case(
        "group_norm",
        lambda m, x, w, b: F(m).group_norm(x, 2, w, b),
        away((2, 4, 3), (4,), (4,)),
        fd=True,
    ),
    Case("instance_norm", lambda m, x: F(m).instance_norm(x), away((2, 3, 4)), third=False),
    Case(
        "instance_norm_affine",
        lambda m, x, w, b: F(m).instance_norm(x, weight=w, bias=b),
        away((2, 3, 4), (3,), (3,)),
        third=False,
    ),
    Case("local_response_norm", lambda m, x: F(m).local_response_norm(x, 2), away((2, 4, 3))),
    # linear, convolutions
    Case("linear", lambda m, x, w, b: F(m).linear(x, w, b), away(B, (2, 3), (2,)), fd=True),
    Case("bilinear", lambda m, x, y, w: F(m).bilinear(x, y, w), away((2, 3), (2, 2), (2, 3, 2))),
    Case("conv1d", _conv("conv1d", stride=2, padding=1), away((2, 2, 7), (3, 2, 3), (3,)), fd=True),
    Case(
        "conv1d_dilated_groups",
        _conv("conv1d", dilation=2, groups=2),
        away((1, 4, 7), (4, 2, 2), (4,)),
    ),
    Case("conv2d", _conv("conv2d", padding=1), away(SMALL, (2, 1, 3, 3), (2,)), fd=True),
    Case(
        "conv2d_stride_groups",
        _conv("conv2d", stride=(2, 1), dilation=(1, 2), groups=2),
        away((1, 4, 5, 6), (2, 2, 2, 2), (2,)),
    ),
    Case("conv3d", _conv("conv3d", padding=1), away((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,))),
    Case(
        "conv_transpose1d",
        _conv("conv_transpose1d", stride=2, padding=1, output_padding=1),
        away((1, 2, 4), (2, 3, 3), (3,)),
        fd=True,
    ),
    Case(
        "conv_transpose2d",
        _conv("conv_transpose2d", stride=2, groups=2, dilation=1),
        away((1, 4, 3, 3), (4, 1, 2, 2), (2,)),
    ),
    Case(
        "conv_transpose3d",
        _conv("conv_transpose3d", stride=1, padding=0),
        away((1, 1, 2, 2, 2), (1, 2, 2, 2, 2), (2,)),
    ),
    # pools
    Case("max_pool1d", lambda m, x: F(m).max_pool1d(x * x, 2), away((1, 2, 6))),
    Case("max_pool2d", lambda m, x: F(m).max_pool2d(x * x, 2, 1), away(IMG)),
    Case(
        "max_pool2d_ceil",
        lambda m, x: F(m).max_pool2d(x * x, 2, 2, ceil_mode=True, padding=1),
        away(IMG),
    ),
    Case("max_pool3d", lambda m, x: F(m).max_pool3d(x * x, 2), away((1, 1, 4, 4, 4))),
    Case("avg_pool1d", lambda m, x: F(m).avg_pool1d(x * x, 3, 2, ceil_mode=True), away((1, 2, 6))),
    Case(
        "avg_pool2d",
        lambda m, x: F(m).avg_pool2d(x * x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        away(SMALL),
        fd=True,
    ),
    Case("avg_pool3d", lambda m, x: F(m).avg_pool3d(x * x, 2), away((1, 1, 4, 4, 4))),
    Case("lp_pool2d", lambda m, x: F(m).lp_pool2d(x, 2.0, 2), away(IMG)),
    Case("adaptive_avg_pool1d", lambda m, x: F(m).adaptive_avg_pool1d(x * x, 3), away((1, 2, 7))),
    Case("adaptive_avg_pool2d", lambda m, x: F(m).adaptive_avg_pool2d(x * x, (2, 3)), away(IMG)),
    Case("adaptive_max_pool2d", lambda m, x: F(m).adaptive_max_pool2d(x * x, (2, 3)), away(IMG)),
    Case(
        "adaptive_avg_pool3d",
        lambda m, x: F(m).adaptive_avg_pool3d(x * x, 2),
        away((1, 1, 3, 3, 3)),
    ),
    # resampling, padding, patches
    Case(
        "interpolate_nearest",
        lambda m, x: F(m).interpolate(x * x, scale_factor=2, mode="nearest"),
        away(IMG),
    ),
    Case(
        "interpolate_bilinear",
        lambda m, x: F(m).interpolate(x * x, size=(7, 4), mode="bilinear", align_corners=False),
        away(SMALL),
        fd=True,
    ),
    Case(
        "interpolate_bilinear_aligned",
        lambda m, x: F(m).interpolate(x * x, size=(7, 4), mode="bilinear", align_corners=True),
        away(IMG),
    ),
    Case(
        "interpolate_bicubic",
        lambda m, x: F(m).interpolate(x * x, size=(6, 6), mode="bicubic"),
        away(IMG),
    ),
    Case(
        "interpolate_linear",
        lambda m, x: F(m).interpolate(x * x, scale_factor=1.5, mode="linear"),
        away((1, 2, 5)),
    ),
    Case(
        "interpolate_trilinear",
        lambda m, x: F(m).interpolate(x * x, size=(3, 3, 3), mode="trilinear"),
        away((1, 1, 2, 2, 2)),
    ),
    Case(
        "interpolate_area",
        lambda m, x: F(m).interpolate(x * x, size=(2, 3), mode="area"),
        away(IMG),
    ),
    Case(
        "grid_sample",
        lambda m, x, g: F(m).grid_sample(x * x, m.tanh(g), align_corners=False),
        away((1, 2, 4, 4), (1, 3, 3, 2)),
    ),
    Case(
        "grid_sample_nearest",
        lambda m, x, g: F(m).grid_sample(x * x, m.tanh(g), mode="nearest", align_corners=True),
        away((1, 2, 4, 4), (1, 3, 3, 2)),
    ),
    Case(
        "grid_sample_border",
        lambda m, x, g: F(m).grid_sample(x, g, padding_mode="border", align_corners=True),
        away((1, 1, 3, 3), (1, 2, 2, 2)),
    ),
    Case(
        "affine_grid",
        lambda m, t: F(m).affine_grid(t, (1, 1, 3, 4), align_corners=False) ** 2,
        away((1, 2, 3)),
    ),
    Case("pad_constant", lambda m, x: F(m).pad(x * x, (1, 2, 0, 1), value=0.5), away(IMG)),
    Case("pad_reflect", lambda m, x: F(m).pad(x * x, (2, 1, 1, 2), mode="reflect"), away(IMG)),
    Case("pad_replicate", lambda m, x: F(m).pad(x * x, (2, 1, 1, 2), mode="replicate"), away(IMG)),
    Case("pad_circular", lambda m, x: F(m).pad(x * x, (2, 1, 1, 2), mode="circular"), away(IMG)),
    Case(
        "unfold",
        lambda m, x: F(m).unfold(x * x, 2, dilation=1, padding=1, stride=2),
        away(IMG),
    ),
    Case(
        "fold",
        lambda m, x: F(m).fold(x * x, (3, 4), 2),
        away((1, 8, 6)),
    ),
    Case("pixel_shuffle", lambda m, x: F(m).pixel_shuffle(x * x, 2), away((1, 4, 2, 3))),
    # embedding, dropout, attention
    Case(
        "embedding",
        lambda m, w: F(m).embedding(_long(m, [[0, 2], [2, 3]]), w * w),
        away((4, 3)),
    ),
    Case(
        "embedding_padding_idx",
        lambda m, w: F(m).embedding(_long(m, [1, 1, 0]), w, padding_idx=0) ** 3,
        away((4, 3)),
    ),
    Case(
        "embedding_bag",
        lambda m, w: F(m).embedding_bag(
            _long(m, [0, 2, 1, 3]), w**2, _long(m, [0, 2]), mode="mean"
        ),
        away((4, 3)),
        beyond_torch=True,
    ),
    Case("dropout_p0", lambda m, x: F(m).dropout(x * x, p=0.0), away(B)),
    Case("dropout_eval", lambda m, x: F(m).dropout(x**3, p=0.5, training=False), away(B)),
    Case(
        "sdpa",
        lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
        away((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)),
        beyond_torch=True,  # torch's CPU flash kernel (float64 4-d inputs) has none
    ),
    Case(
        "sdpa_causal",
        lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
        away((1, 3, 4), (1, 3, 4), (1, 3, 2)),
    ),
    Case(
        "sdpa_mask",
        lambda m, q, k, v, b: F(m).scaled_dot_product_attention(q, k, v, attn_mask=b),
        away((1, 3, 4), (1, 5, 4), (1, 5, 2), (3, 5)),
    ),
    # gradients with respect to the target too
    Case("mse_target", lambda m, x, y: F(m).mse_loss(x * y, y, reduction="sum"), away(B, B)),
    Case("l1_target", lambda m, x, y: F(m).l1_loss(x, y * y), away(B, B)),
    Case("huber_target", lambda m, x, y: F(m).huber_loss(x, y**3, delta=0.8), away(B, B)),
    Case("smooth_l1_target", lambda m, x, y: F(m).smooth_l1_loss(x, y**3), away(B, B)),
    Case(
        "kl_div_target", lambda m, x, y: F(m).kl_div(x, m.sigmoid(y), reduction="sum"), away(B, B)
    ),
    Case(
        "bce_target",
        lambda m, x, y: F(m).binary_cross_entropy(m.sigmoid(x), m.sigmoid(y)),
        away(B, B),
    ),
    Case(
        "bce_logits_target",
        lambda m, x, y: F(m).binary_cross_entropy_with_logits(x, m.sigmoid(y), reduction="sum"),
        away(B, B),
    ),
    Case(
        "cosine_embedding",
        lambda m, x, y: F(m).cosine_embedding_loss(x, y, _probs(m, [1.0, -1.0, 1.0, -1.0])),
        away(B, B),
    ),
    Case(
        "triplet_margin",
        lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, margin=2.0),
        away(B, B, B),
    ),
    Case(
        "hinge_embedding",
        lambda m, x: F(m).hinge_embedding_loss(x, _probs(m, SIGNS), margin=1.5),
        away(B),
    ),
    Case(
        "multi_margin",
        lambda m, x: F(m).multi_margin_loss(x, _long(m, TARGET), p=2, margin=1.5),
        away(B),
        beyond_torch=True,
    ),
    Case(
        "multilabel_soft_margin",
        lambda m, x: F(m).multilabel_soft_margin_loss(x, _probs(m, SOFT)),
        away(B),
    ),
    Case("pdist", lambda m, x: F(m).pdist(x), away((4, 3)), beyond_torch=True),
    Case("normalize_p1", lambda m, x: F(m).normalize(x, p=1.0, dim=0), away(B)),
    Case(
        "nll_ignore_mean",
        lambda m, x: F(m).nll_loss(x, _long(m, [0, -100, 1, 2]), ignore_index=-100),
        away(B),
    ),
    Case(
        "max_unpool2d",
        lambda m, x: F(m).max_unpool2d(*F(m).max_pool2d(x * x, 2, return_indices=True), 2),
        away((1, 1, 4, 4)),
    ),
    Case(
        "lp_pool1d",
        lambda m, x: F(m).lp_pool1d(x, 3.0, 2),
        positive((1, 2, 6)),
    ),
    Case("one_hot_mul", lambda m, x: x * F(m).one_hot(_long(m, [0, 2, 1, 2]), 3), away(B)),
]


#: Where tensorweaver's value differs from torch's (a strict xfail each: the record).
DIFFERENT_VALUES: dict[str, str] = {}
_BIAS = (
    "torch's bias gradient of a fused backward requires grad; tensorweaver's sum of g is constant"
)
_MASK = "the gradient is g masked by x, constant in x; torch's formula reads x so it requires grad"
#: Where the gradient of a scalar loss requires grad on torch but is a constant on
#: tensorweaver: torch marks every output of a backward formula that reads a saved input
#: (convolution_backward reads x and the weight), tensorweaver only those that depend on
#: one. ``penalty.backward()`` on such a gradient alone raises where torch's gives zeros.
CONSTANT_GRADIENTS = {
    "prelu": _MASK,
    **dict.fromkeys(
        "layer_norm batch_norm_train batch_norm_eval instance_norm_affine".split(), _BIAS
    ),
    "nll_ignore_mean": "nll's gradient of log-probabilities is constant in them",
}


@pytest.mark.parametrize(("case", "seed"), params(NN_CASES, xfail=DIFFERENT_VALUES))
def test_double_backward_like_torch(backend: str, case: Case, seed: int) -> None:
    check_case(case, seed)


@pytest.mark.parametrize(("case", "seed"), params(NN_CASES, xfail=CONSTANT_GRADIENTS))
def test_loss_gradient_requires_grad_like_torch(backend: str, case: Case, seed: int) -> None:
    check_loss_flags(case, seed)


#: Checked by finite differences alone: torch's first derivative of hardsigmoid is 1/6 in
#: float32 (off by 3e-8) and it has no second.
FD_ONLY = [Case("hardsigmoid", lambda m, x: F(m).hardsigmoid(x * 2), away((3, 4)), fd=True)]


@pytest.mark.parametrize(("case", "seed"), params(NN_CASES + FD_ONLY, fd=True))
def test_gradgradcheck(backend: str, case: Case, seed: int) -> None:
    finite_differences(case, seed)
