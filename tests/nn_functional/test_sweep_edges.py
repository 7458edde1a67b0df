"""A differential sweep of ``nn.functional`` and the layers built on it against PyTorch 2.13,
at the edges users reach and the other tests leave out: unbatched and transposed inputs,
``padding_mode`` through the layers, ``ceil_mode`` with ``count_include_pad`` and
``divisor_override``, running statistics with ``momentum=None``, every ``reduction`` with
weights, ``ignore_index`` and ``label_smoothing`` together, empty batches, negative pads,
antialiased and ``recompute_scale_factor`` resizing, activation keywords, ``max_norm``
renormalising in place, and distance ``eps``. Values, dtypes, shapes and float64 gradients
are PyTorch's; one test runs a batch of them on cuPyNumeric."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import check, randn
from tensor.tensor_reference import like_torch, raises_like_torch
from tw_backends import entered


def uniform(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.05, 0.95, shape)


def positive(*shape: int, seed: int = 0) -> np.ndarray:
    return np.abs(randn(*shape, seed=seed)) + 0.1


TARGETS = np.array([0, 2, 1, 2, 0])
IGNORED = np.array([0, -100, 1, 2, -100])

# name: (expression of (F, *tensors), inputs, indices of the inputs to differentiate)
CONV = {
    "conv1d groups, dilation, stride > kernel": (
        lambda F, x, w, b: F.conv1d(x, w, b, stride=4, dilation=2, groups=2),
        (randn(2, 4, 9), randn(6, 2, 3), randn(6)),
    ),
    "conv1d same, even kernel, dilation": (
        lambda F, x, w: F.conv1d(x, w, padding="same", dilation=3),
        (randn(1, 2, 11), randn(3, 2, 4)),
    ),
    "conv2d unbatched, tuple padding": (
        lambda F, x, w: F.conv2d(x, w, padding=(1, 2), stride=(2, 1)),
        (randn(2, 5, 6), randn(3, 2, 3, 2)),
    ),
    "conv2d transposed input, valid": (
        lambda F, x, w: F.conv2d(x.transpose(2, 3), w, stride=(3, 1), padding="valid"),
        (randn(2, 3, 7, 5), randn(4, 3, 2, 2)),
    ),
    "conv2d channels-last input, depthwise": (
        lambda F, x, w: F.conv2d(x.permute(0, 3, 1, 2), w, groups=3),
        (randn(2, 5, 6, 3), randn(6, 1, 3, 3)),
    ),
    "conv3d unbatched, same": (
        lambda F, x, w: F.conv3d(x, w, padding="same"),
        (randn(2, 4, 5, 3), randn(2, 2, 2, 3, 2)),
    ),
    "conv_transpose1d groups, dilation, output_padding": (
        lambda F, x, w, b: F.conv_transpose1d(x, w, b, 3, 1, 2, 2, 2),
        (randn(2, 4, 5), randn(4, 3, 3), randn(6)),
    ),
    "conv_transpose2d unbatched, stride > kernel": (
        lambda F, x, w: F.conv_transpose2d(
            x, w, stride=(4, 3), padding=(1, 0), output_padding=(3, 1)
        ),
        (randn(2, 3, 4), randn(2, 3, 2, 2)),
    ),
    "conv_transpose3d groups": (
        lambda F, x, w: F.conv_transpose3d(x, w, stride=2, groups=2, dilation=(1, 2, 1)),
        (randn(1, 4, 2, 3, 2), randn(4, 1, 2, 2, 2)),
    ),
    "conv1d empty batch": (lambda F, x, w: F.conv1d(x, w), (randn(0, 2, 5), randn(3, 2, 3))),
}

POOL = {
    "max_pool1d ceil, padding, dilation, indices": (
        lambda F, x: F.max_pool1d(x, 3, 2, 1, 2, ceil_mode=True, return_indices=True),
        (randn(2, 3, 10),),
    ),
    "max_pool2d unbatched ceil indices": (
        lambda F, x: F.max_pool2d(x, (3, 2), (2, 3), 1, ceil_mode=True, return_indices=True),
        (randn(3, 7, 8),),
    ),
    "max_pool2d transposed input": (
        lambda F, x: F.max_pool2d(x.transpose(2, 3), 3, 2, 1, return_indices=True),
        (randn(2, 2, 7, 5),),
    ),
    "max_pool3d unbatched ceil": (
        lambda F, x: F.max_pool3d(x, 2, 2, 1, ceil_mode=True),
        (randn(2, 5, 4, 3),),
    ),
    "avg_pool1d ceil, no pad count": (
        lambda F, x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        (randn(2, 3, 8),),
    ),
    "avg_pool2d ceil, pad count, divisor": (
        lambda F, x: F.avg_pool2d(x, (2, 3), (3, 2), 1, True, True, divisor_override=5),
        (randn(2, 3, 7, 6),),
    ),
    "avg_pool3d unbatched ceil, no pad count": (
        lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        (randn(2, 5, 4, 6),),
    ),
    "lp_pool1d ceil": (lambda F, x: F.lp_pool1d(x, 2, 3, 2, ceil_mode=True), (positive(2, 3, 8),)),
    "lp_pool2d p=1.5 unbatched": (lambda F, x: F.lp_pool2d(x, 1.5, 2), (positive(3, 5, 5),)),
    "lp_pool3d": (lambda F, x: F.lp_pool3d(x, 2, 2, ceil_mode=True), (positive(1, 2, 5, 5, 3),)),
    "adaptive_avg_pool2d None and larger": (
        lambda F, x: F.adaptive_avg_pool2d(x, (None, 8)),
        (randn(2, 3, 7, 5),),
    ),
    "adaptive_max_pool3d unbatched indices": (
        lambda F, x: F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True),
        (randn(2, 5, 4, 7),),
    ),
    "max_unpool1d unbatched": (
        lambda F, x: F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2),
        (randn(2, 6),),
    ),
}


def _batch_norm(F: Any, x: Any, w: Any, b: Any, mean: Any, var: Any, training: bool) -> tuple:
    mean, var = mean.detach().clone(), var.detach().clone()
    out = F.batch_norm(x, mean, var, w, b, training=training, momentum=0.3, eps=1e-3)
    return out, mean, var


NORM = {
    "batch_norm training, running statistics": (
        lambda F, *t: _batch_norm(F, *t, True),
        (randn(4, 3, 5), randn(3), randn(3), randn(3), positive(3)),
        (0, 1, 2),
    ),
    "batch_norm eval": (
        lambda F, *t: _batch_norm(F, *t, False),
        (randn(4, 3, 5), randn(3), randn(3), randn(3), positive(3)),
        (0, 1, 2),
    ),
    "layer_norm 3 axes": (
        lambda F, x, w, b: F.layer_norm(x, (2, 3, 4), w, b, eps=1e-2),
        (randn(2, 2, 3, 4), randn(2, 3, 4), randn(2, 3, 4)),
    ),
    "layer_norm weight only": (lambda F, x, w: F.layer_norm(x, [5], w), (randn(3, 5), randn(5))),
    "group_norm 2-D": (lambda F, x: F.group_norm(x, 2), (randn(3, 4),)),
    "instance_norm running stats": (
        lambda F, x, mean, var: (
            F.instance_norm(x, m := mean.detach().clone(), v := var.detach().clone(), momentum=0.2),
            m,
            v,
        ),
        (randn(2, 3, 5), randn(3), positive(3)),
        (0,),
    ),
    "local_response_norm 3-D": (
        lambda F, x: F.local_response_norm(x, 3, alpha=1e-2, beta=0.7, k=2.0),
        (randn(2, 5, 4),),
    ),
    "rms_norm eps None": (lambda F, x: F.rms_norm(x, (2, 4)), (randn(3, 2, 4),)),
    "normalize p=inf": (lambda F, x: F.normalize(x, p=float("inf")), (randn(3, 4),)),
    "normalize eps larger than norms": (
        lambda F, x: F.normalize(x, eps=1e-3),
        (np.array([[0.0, 0.0], [1e-4, 0.0], [3.0, 4.0]]),),
    ),
}

LOSS: dict[str, Any] = {}
for _r in ("mean", "sum", "none"):
    LOSS |= {
        f"cross_entropy weight, ignore, smoothing, {_r}": (
            lambda F, x, t, w, r=_r: F.cross_entropy(x, t, w, reduction=r, label_smoothing=0.3),
            (randn(5, 3), IGNORED, positive(3)),
            (0,),
        ),
        f"cross_entropy probabilities, weight, smoothing, {_r}": (
            lambda F, x, t, w, r=_r: F.cross_entropy(x, t, w, reduction=r, label_smoothing=0.25),
            (randn(5, 3), uniform(5, 3), positive(3)),
            (0, 1),
        ),
        f"cross_entropy 4-D, ignore 2, {_r}": (
            lambda F, x, t, w, r=_r: F.cross_entropy(
                x, t, w, reduction=r, ignore_index=2, label_smoothing=0.1
            ),
            (randn(2, 3, 2, 2), np.array([[[0, 2], [1, 2]], [[2, 2], [0, 1]]]), positive(3)),
            (0,),
        ),
        f"cross_entropy all ignored, {_r}": (
            lambda F, x, t, r=_r: F.cross_entropy(x, t, reduction=r, label_smoothing=0.1),
            (randn(2, 3), np.array([-100, -100])),
            (0,),
        ),
        f"cross_entropy empty batch, {_r}": (
            lambda F, x, t, r=_r: F.cross_entropy(x, t, reduction=r),
            (randn(0, 3), np.zeros(0, np.int64)),
            (0,),
        ),
        f"cross_entropy unbatched, {_r}": (
            lambda F, x, t, r=_r: F.cross_entropy(x, t, reduction=r, label_smoothing=0.2),
            (randn(3), np.array(1)),
            (0,),
        ),
        f"nll_loss 3-D weight ignore, {_r}": (
            lambda F, x, t, w, r=_r: F.nll_loss(x, t, w, reduction=r, ignore_index=1),
            (randn(2, 3, 4), np.array([[0, 1, 2, 0], [2, 2, 1, 0]]), positive(3)),
            (0,),
        ),
        f"bce_with_logits pos_weight, extremes, {_r}": (
            lambda F, x, t, p, r=_r: F.binary_cross_entropy_with_logits(
                x, t, reduction=r, pos_weight=p
            ),
            (np.array([-800.0, 800.0, 30.0, -30.0]), uniform(4), positive(4)),
            (0, 1),
        ),
        f"binary_cross_entropy weight, {_r}": (
            lambda F, x, t, w, r=_r: F.binary_cross_entropy(x, t, w, reduction=r),
            (uniform(4, 3), uniform(4, 3, seed=1), positive(4, 3)),
            (0, 1),
        ),
        f"smooth_l1 beta 0, {_r}": (
            lambda F, x, t, r=_r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0),
            (randn(4, 3), randn(4, 3, seed=1)),
            (0, 1),
        ),
        f"huber delta 0.5, {_r}": (
            lambda F, x, t, r=_r: F.huber_loss(x, t, reduction=r, delta=0.5),
            (randn(4, 3), randn(4, 3, seed=1)),
            (0, 1),
        ),
        f"kl_div log_target, {_r}": (
            lambda F, x, t, r=_r: F.kl_div(x, t, reduction=r, log_target=True),
            (randn(4, 3), randn(4, 3, seed=1)),
            (0, 1),
        ),
        f"poisson_nll full, linear input, {_r}": (
            lambda F, x, t, r=_r: F.poisson_nll_loss(x, t, False, True, reduction=r, eps=1e-4),
            (positive(4, 3), positive(4, 3, seed=1) * 3),
            (0,),
        ),
        f"gaussian_nll variance per row, {_r}": (
            lambda F, x, t, v, r=_r: F.gaussian_nll_loss(x, t, v, full=True, reduction=r),
            (randn(4, 3), randn(4, 3, seed=1), positive(4)),
            (0, 1, 2),
        ),
        f"mse empty batch, {_r}": (
            lambda F, x, t, r=_r: F.mse_loss(x, t, reduction=r),
            (randn(0, 2), randn(0, 2)),
            (0, 1),
        ),
        f"multi_margin p=2 weight, {_r}": (
            lambda F, x, t, w, r=_r: F.multi_margin_loss(x, t, 2, 0.7, w, reduction=r),
            (randn(4, 3), np.array([0, 2, 1, 1]), positive(3)),
            (0,),
        ),
        f"triplet swap p=1.5, {_r}": (
            lambda F, a, p, n, r=_r: F.triplet_margin_loss(
                a, p, n, margin=0.5, p=1.5, eps=1e-3, swap=True, reduction=r
            ),
            (randn(4, 3), randn(4, 3, seed=1), randn(4, 3, seed=2)),
            (0, 1, 2),
        ),
    }
LOSS["kl_div batchmean"] = (
    lambda F, x, t: F.kl_div(x, t, reduction="batchmean"),
    (randn(4, 3), uniform(4, 3)),
    (0, 1),
)

PAD = {
    f"pad {mode} {name}": (lambda F, x, w=widths, m=mode: F.pad(x, w, mode=m), (randn(*shape),))
    for mode in ("constant", "reflect", "replicate", "circular")
    for name, widths, shape in (
        ("1-D unbatched", (2, 1), (3, 5)),
        ("2-D negative", (-1, 2, 1, -2), (1, 2, 4, 5)),
        ("3-D unbatched", (1, 0, 2, 1, 1, 1), (2, 3, 4, 5)),
    )
}
PAD |= {
    "pad circular by the whole size": (
        lambda F, x: F.pad(x, (4, 4), mode="circular"),
        (randn(1, 2, 4),),
    ),
    "pad replicate beyond the size": (
        lambda F, x: F.pad(x, (7, 9), mode="replicate"),
        (randn(1, 2, 3),),
    ),
    "pad constant value, transposed input": (
        lambda F, x: F.pad(x.transpose(-1, -2), (1, 2, 3, 4), value=2.5),
        (randn(2, 3, 4),),
    ),
}

INTERPOLATE = {
    f"interpolate {mode} {d}-D {name}": (
        lambda F, x, k=kwargs, m=mode: F.interpolate(x, mode=m, **k),
        (randn(*shape),),
    )
    for mode, d, shape in (
        ("nearest", 3, (1, 2, 3, 4, 5)),
        ("nearest-exact", 2, (2, 2, 5, 6)),
        ("linear", 1, (2, 3, 5)),
        ("bicubic", 2, (2, 2, 5, 6)),
        ("trilinear", 3, (1, 2, 3, 4, 5)),
        ("area", 2, (2, 2, 5, 6)),
    )
    for name, kwargs in (
        ("scale per axis", dict(scale_factor=(2.5, 0.5, 1.3)[:d])),
        ("recompute shrink", dict(scale_factor=0.45, recompute_scale_factor=True)),
        ("fractional scale", dict(scale_factor=1.7)),
    )
}
INTERPOLATE |= {
    f"interpolate {mode} antialias {name}": (
        lambda F, x, k=kwargs, m=mode: F.interpolate(x, mode=m, antialias=True, **k),
        (randn(2, 2, 5, 6),),
    )
    for mode in ("bilinear", "bicubic")
    for name, kwargs in (
        ("align_corners", dict(size=(3, 4), align_corners=True)),
        ("recompute", dict(scale_factor=0.37, recompute_scale_factor=True)),
        ("mixed", dict(size=(2, 13))),
    )
}
INTERPOLATE |= {
    "interpolate unbatched-like 3-D nearest": (
        lambda F, x: F.interpolate(x, size=4),
        (randn(2, 3, 5),),
    ),
    "interpolate bilinear align_corners, transposed": (
        lambda F, x: F.interpolate(x.transpose(2, 3), (7, 3), mode="bilinear", align_corners=True),
        (randn(1, 2, 5, 4),),
    ),
}

_EDGES = np.array([-30.0, -1.0, -1e-8, 0.0, 1e-8, 0.5, 1.0, 2.0, 19.9, 20.0, 25.0, 100.0])
ACTIVATION = {
    "gelu tanh": (lambda F, x: F.gelu(x, approximate="tanh"), (_EDGES,)),
    "softplus beta, threshold": (lambda F, x: F.softplus(x, beta=0.5, threshold=3.0), (_EDGES,)),
    "softplus negative beta": (lambda F, x: F.softplus(x, beta=-1.0), (_EDGES,)),
    "rrelu eval": (lambda F, x: F.rrelu(x, 0.1, 0.3, training=False), (_EDGES,)),
    "elu alpha 0.5": (lambda F, x: F.elu(x, alpha=0.5), (_EDGES,)),
    "elu negative alpha": (lambda F, x: F.elu(x, alpha=-1.0), (_EDGES,)),
    "celu alpha 2 in place": (lambda F, x: F.celu(x * 1, 2.0, inplace=True), (_EDGES,)),
    "selu": (lambda F, x: F.selu(x), (_EDGES,)),
    "glu dim 0": (lambda F, x: F.glu(x, dim=0), (randn(4, 6),)),
    "glu dim -2": (lambda F, x: F.glu(x, dim=-2), (randn(4, 6),)),
    "threshold in place": (lambda F, x: F.threshold(x * 1, 0.5, -3.0, inplace=True), (_EDGES,)),
    "leaky_relu negative slope": (lambda F, x: F.leaky_relu(x, -2.0), (_EDGES,)),
    "prelu one weight": (lambda F, x, w: F.prelu(x, w), (randn(2, 3, 4), randn(1))),
    "softshrink": (lambda F, x: F.softshrink(x, 0.7), (_EDGES,)),
    "softmax implicit dim 3-D": (lambda F, x: F.softmax(x), (randn(2, 3, 4),)),
    "log_softmax implicit dim 4-D": (lambda F, x: F.log_softmax(x), (randn(2, 3, 4, 2),)),
    "dropout2d eval": (lambda F, x: F.dropout2d(x, 0.5, training=False), (randn(2, 3, 4, 5),)),
    "feature_alpha_dropout eval": (
        lambda F, x: F.feature_alpha_dropout(x, 0.5, training=False),
        (randn(2, 3, 4),),
    ),
}


def _renormed(F: Any, index: Any, weight: Any, norm_type: float) -> tuple:
    weight = weight.detach().clone()
    return F.embedding(index, weight, max_norm=1.0, norm_type=norm_type), weight


_ROWS = np.array([[0, 2, 4], [4, 3, 2]])
LOOKUP = {
    "embedding negative padding_idx": (
        lambda F, i, w: F.embedding(i, w, padding_idx=-1),
        (_ROWS, randn(5, 3)),
    ),
    "embedding scale_grad_by_freq": (
        lambda F, i, w: F.embedding(i, w, scale_grad_by_freq=True),
        (_ROWS, randn(5, 3)),
    ),
    "embedding max_norm renormalises in place": (
        lambda F, i, w: _renormed(F, i, w, 2.0),
        (_ROWS, randn(5, 3, scale=3)),
        (),
    ),
    "embedding max_norm p=1, repeated rows": (
        lambda F, i, w: _renormed(F, i, w, 1.0),
        (np.array([1, 1, 3]), randn(5, 3, scale=3)),
        (),
    ),
    "embedding empty index": (
        lambda F, i, w: F.embedding(i, w),
        (np.zeros((2, 0), np.int64), randn(5, 3)),
    ),
    "one_hot inferred classes": (lambda F, i: F.one_hot(i), (_ROWS,)),
    "one_hot empty with classes": (lambda F, i: F.one_hot(i, 4), (np.zeros((0, 2), np.int64),)),
    "one_hot 0-d": (lambda F, i: F.one_hot(i, 4), (np.array(2),)),
    "cosine_similarity eps larger than norms": (
        lambda F, a, b: F.cosine_similarity(a, b, dim=1, eps=0.5),
        (randn(4, 3, scale=0.1), randn(4, 3, seed=1)),
    ),
    "cosine_similarity broadcast": (
        lambda F, a, b: F.cosine_similarity(a, b, dim=-1),
        (randn(4, 1, 3), randn(2, 3, seed=1)),
    ),
    "pairwise_distance p=inf eps": (
        lambda F, a, b: F.pairwise_distance(a, b, p=float("inf"), eps=1e-3),
        (randn(4, 3), randn(4, 3, seed=1)),
    ),
    "pairwise_distance p=0.5 keepdim broadcast": (
        lambda F, a, b: F.pairwise_distance(a, b, p=0.5, keepdim=True),
        (randn(4, 3), randn(3, seed=1)),
    ),
    "unfold dilation, padding, stride": (
        lambda F, x: F.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 0), stride=2),
        (randn(2, 3, 6, 7),),
    ),
    "unfold unbatched transposed": (
        lambda F, x: F.unfold(x.transpose(1, 2), 2, padding=1),
        (randn(3, 4, 5),),
    ),
    "fold dilation, padding, stride": (
        lambda F, x: F.fold(x, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
        (randn(2, 12, 12),),
    ),
    "fold unbatched": (lambda F, x: F.fold(x, (4, 5), 2), (randn(8, 12),)),
}

CASES = CONV | POOL | NORM | LOSS | PAD | INTERPOLATE | ACTIVATION | LOOKUP


# Deprecation warnings (implicit softmax dim, kl_div 'mean') are PyTorch's too.
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", CASES.values(), ids=CASES)
def test_like_torch(backend: str, case: tuple) -> None:
    fn, arrays, *grad = case
    check(fn, *arrays, grad=grad[0] if grad else None)


def _layer(m: Any, cls: str, *args: Any, weight: Any, **kwargs: Any) -> Any:
    """A layer of ``m`` (tw or torch) whose weight is ``weight`` and bias zero."""
    layer = getattr(m.nn, cls)(*args, **kwargs).double()
    with m.no_grad():
        layer.weight.copy_(m.tensor(weight))
        if layer.bias is not None:
            layer.bias.zero_()
    return layer


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    ("cls", "shape", "kwargs"),
    [
        ("Conv1d", (3, 7), dict(padding=2, stride=2)),
        ("Conv2d", (1, 3, 5, 6), dict(padding=(1, 2), stride=2)),
        ("Conv2d", (1, 3, 5, 6), dict(padding="same", dilation=(1, 2))),
        ("Conv3d", (3, 4, 3, 5), dict(padding=1)),
    ],
    ids=["1d unbatched", "2d strided", "2d same", "3d unbatched"],
)
def test_conv_layer_padding_modes(backend: str, mode: str, cls: str, shape: tuple, kwargs: dict):
    nd = int(cls[-2])
    weight = randn(4, 3, *(3,) * nd, seed=1)
    x = randn(*shape)
    outs = []
    for m in (tw, torch):
        layer = _layer(m, cls, 3, 4, 3, weight=weight, padding_mode=mode, **kwargs)
        outs.append(layer(m.tensor(x)))
    like = outs[0].detach().numpy(), outs[1].detach().numpy()
    np.testing.assert_allclose(*like, rtol=1e-10, atol=1e-12)


def _batch_norm_layer_steps(m: Any, x: Any, momentum: float | None, track: bool) -> tuple:
    layer = m.nn.BatchNorm1d(3, momentum=momentum, track_running_stats=track).double()
    outs = [layer(x * (i + 1)) for i in range(3)]
    outs.append(layer.eval()(x))
    stats = (layer.running_mean, layer.running_var, layer.num_batches_tracked) if track else ()
    return (*outs, *stats)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("track", [True, False])
def test_batch_norm_layer_running_statistics(backend: str, momentum: Any, track: bool) -> None:
    like_torch(lambda m, x: _batch_norm_layer_steps(m, x, momentum, track), randn(4, 3, 5))


ERRORS = {
    "cross_entropy target out of range": lambda m: m.nn.functional.cross_entropy(
        m.zeros(2, 3), m.tensor([0, 3])
    ),
    "cross_entropy negative target": lambda m: m.nn.functional.cross_entropy(
        m.zeros(2, 3), m.tensor([0, -1])
    ),
    "nll_loss target out of range": lambda m: m.nn.functional.nll_loss(
        m.zeros(2, 3), m.tensor([0, 5])
    ),
    "cross_entropy smoothing above 1": lambda m: m.nn.functional.cross_entropy(
        m.zeros(2, 3), m.tensor([0, 1]), label_smoothing=1.5
    ),
    "cross_entropy batch mismatch": lambda m: m.nn.functional.cross_entropy(
        m.zeros(2, 3), m.tensor([0, 1, 1])
    ),
    "binary_cross_entropy input above 1": lambda m: m.nn.functional.binary_cross_entropy(
        m.tensor([1.5, 0.5]), m.tensor([1.0, 0.0])
    ),
    "interpolate size and scale": lambda m: m.nn.functional.interpolate(
        m.zeros(1, 2, 5), size=4, scale_factor=2
    ),
    "interpolate antialias nearest": lambda m: m.nn.functional.interpolate(
        m.zeros(1, 2, 5, 5), size=3, antialias=True
    ),
    "interpolate linear on 4-D": lambda m: m.nn.functional.interpolate(
        m.zeros(1, 2, 5, 4), size=3, mode="linear"
    ),
    "one_hot too few classes": lambda m: m.nn.functional.one_hot(m.tensor([0, 3]), 3),
    "one_hot negative": lambda m: m.nn.functional.one_hot(m.tensor([-1, 0]), 3),
    "embedding index out of range": lambda m: m.nn.functional.embedding(
        m.tensor([5]), m.ones(5, 3)
    ),
    "batch_norm one value per channel": lambda m: m.nn.functional.batch_norm(
        m.zeros(1, 3), None, None, training=True
    ),
    "batch_norm momentum None": lambda m: m.nn.functional.batch_norm(
        m.zeros(2, 3), m.zeros(3), m.ones(3), training=True, momentum=None
    ),
    "glu odd size": lambda m: m.nn.functional.glu(m.zeros(4, 5)),
    "dropout p above 1": lambda m: m.nn.functional.dropout(m.zeros(3), 1.5),
    "fold wrong block count": lambda m: m.nn.functional.fold(m.zeros(1, 8, 11), (4, 5), 2),
    "group_norm groups do not divide": lambda m: m.nn.functional.group_norm(m.zeros(2, 4, 3), 3),
    "pad reflect as wide as the input": lambda m: m.nn.functional.pad(
        m.zeros(1, 2, 4), (4, 0), mode="reflect"
    ),
}


@pytest.mark.parametrize("call", ERRORS.values(), ids=ERRORS)
def test_error_class_like_torch(backend: str, call: Any) -> None:
    raises_like_torch(call)


def test_a_batch_on_cunumeric() -> None:
    """A cross-section on cuPyNumeric in one start of its runtime (entered here, as this
    folder's other cuPyNumeric tests are): conv, pools, norms, losses, pads, resizing
    (uint8 too), hard activations, lookups and the sweep's fixes."""
    picked = (
        "conv1d groups, dilation, stride > kernel",
        "conv_transpose2d unbatched, stride > kernel",
        "max_pool2d unbatched ceil indices",
        "avg_pool2d ceil, pad count, divisor",
        "batch_norm training, running statistics",
        "cross_entropy weight, ignore, smoothing, mean",
        "cross_entropy probabilities, weight, smoothing, sum",
        "pad circular 2-D negative",
        "interpolate bicubic antialias mixed",
        "embedding max_norm renormalises in place",
        "fold dilation, padding, stride",
    )
    with entered("cunumeric"):
        for name in picked:
            fn, arrays, *grad = CASES[name]
            check(fn, *arrays, grad=grad[0] if grad else None)
        check(lambda F, x: (F.relu6(x), F.hardswish(x), F.logsigmoid(x)), np.linspace(-4, 7, 12))
        image = (np.arange(60) * 37 % 256).astype(np.uint8).reshape(1, 2, 5, 6)
        like_torch(lambda m, x: m.nn.functional.interpolate(x, (4, 9), mode="bilinear"), image)
        like_torch(
            lambda m, x: m.nn.functional.avg_pool2d(x, 2), np.arange(-8, 24).reshape(2, 4, 4)
        )
        check(
            lambda F, x, y: F.binary_cross_entropy(x, y, reduction="sum"),
            np.array([0.0, 1.0, 0.0, 0.4]),
            np.array([0.0, 1.0, 1.0, 0.5]),
            grad=(0,),
        )
        check(
            lambda F, x: F.interpolate(x, scale_factor=(1.2, 2.0), mode="bilinear"),
            randn(1, 2, 4, 3),
        )
