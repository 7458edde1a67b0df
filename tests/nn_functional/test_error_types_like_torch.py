"""Bad arguments to the ``nn.functional`` functions and ``nn`` layer constructors raise the
exception class PyTorch raises (RuntimeError, ValueError, TypeError, IndexError, ...), with
tw's own message; each row runs the same call on torch and on tw."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from tensor.tensor_reference import raises_like_torch

# Deprecation and broadcasting warnings of some calls (in both libraries) are not the subject.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def F(m: Any) -> Any:
    return m.nn.functional


def x4(m: Any) -> Any:
    return m.ones(1, 2, 4, 4)


def x3(m: Any) -> Any:
    return m.ones(1, 2, 5)


CONV = {
    "conv2d 5-D input": lambda m: F(m).conv2d(m.ones(2, 4, 4, 4, 4), m.ones(3, 2, 3, 3)),
    "conv2d zero stride": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), stride=0),
    "conv2d negative stride": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), stride=-1),
    "conv2d negative padding": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), padding=-1),
    "conv2d zero dilation": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), dilation=0),
    "conv2d bad padding string": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), padding="x"),
    "conv2d same and strided": lambda m: F(m).conv2d(
        x4(m), m.ones(3, 2, 3, 3), padding="same", stride=2
    ),
    "conv2d zero groups": lambda m: F(m).conv2d(x4(m), m.ones(3, 1, 3, 3), groups=0),
    "conv2d out channels not divisible": lambda m: F(m).conv2d(x4(m), m.ones(3, 1, 3, 3), groups=2),
    "conv2d in channels and groups": lambda m: F(m).conv2d(x4(m), m.ones(4, 2, 3, 3), groups=2),
    "conv2d channel mismatch": lambda m: F(m).conv2d(x4(m), m.ones(3, 3, 3, 3)),
    "conv2d kernel larger than input": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 5, 5)),
    "conv2d bias size": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), bias=m.ones(2)),
    "conv2d 3-D weight": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3)),
    "conv2d three strides": lambda m: F(m).conv2d(x4(m), m.ones(3, 2, 3, 3), stride=(1, 1, 1)),
    "conv1d 2-D weight": lambda m: F(m).conv1d(x3(m), m.ones(3, 2)),
    "conv3d 3-D input": lambda m: F(m).conv3d(m.ones(2, 3, 3), m.ones(1, 2, 1, 1, 1)),
    "conv_transpose2d zero stride": lambda m: F(m).conv_transpose2d(
        x4(m), m.ones(2, 3, 3, 3), stride=0
    ),
    "conv_transpose2d output_padding too big": lambda m: F(m).conv_transpose2d(
        x4(m), m.ones(2, 3, 3, 3), output_padding=2, stride=2
    ),
    "conv_transpose2d negative padding": lambda m: F(m).conv_transpose2d(
        x4(m), m.ones(2, 3, 3, 3), padding=-1
    ),
    "conv_transpose2d channel mismatch": lambda m: F(m).conv_transpose2d(x4(m), m.ones(3, 3, 3, 3)),
    "conv_transpose2d groups": lambda m: F(m).conv_transpose2d(x4(m), m.ones(2, 3, 3, 3), groups=3),
    "conv_transpose2d string padding": lambda m: F(m).conv_transpose2d(
        x4(m), m.ones(2, 3, 3, 3), padding="same"
    ),
    "conv_transpose2d 2-D input": lambda m: F(m).conv_transpose2d(m.ones(4, 4), m.ones(2, 3, 3, 3)),
    "conv_transpose2d bias size": lambda m: F(m).conv_transpose2d(
        x4(m), m.ones(2, 3, 3, 3), bias=m.ones(2)
    ),
    "conv_transpose1d output too small": lambda m: F(m).conv_transpose1d(
        x3(m), m.ones(2, 3, 3), padding=5
    ),
    "pad odd length": lambda m: F(m).pad(x4(m), (1, 2, 3)),
    "pad bad mode": lambda m: F(m).pad(x4(m), (1, 1), mode="bad"),
    "pad reflect too much": lambda m: F(m).pad(m.ones(1, 2, 4), (5, 5), mode="reflect"),
    "pad reflect with value": lambda m: F(m).pad(x4(m), (1, 1), mode="reflect", value=2.0),
    "pad longer than input": lambda m: F(m).pad(x4(m), (1,) * 10),
    "pad reflect 1-D": lambda m: F(m).pad(m.ones(4), (1, 1), mode="reflect"),
    "pad circular 2 on 4-D": lambda m: F(m).pad(x4(m), (1, 1), mode="circular"),
    "unfold 2-D input": lambda m: F(m).unfold(m.ones(2, 4), 2),
    "unfold kernel too big": lambda m: F(m).unfold(x4(m), 5),
    "unfold zero stride": lambda m: F(m).unfold(x4(m), 2, stride=0),
    "unfold negative padding": lambda m: F(m).unfold(x4(m), 2, padding=-1),
    "unfold three kernel sizes": lambda m: F(m).unfold(x4(m), (2, 2, 2)),
    "fold channels not divisible": lambda m: F(m).fold(m.ones(1, 7, 9), (4, 4), 2),
    "fold zero stride": lambda m: F(m).fold(m.ones(1, 8, 9), (4, 4), 2, stride=0),
    "fold 4-D input": lambda m: F(m).fold(m.ones(8, 9, 3, 3), (4, 4), 2),
    "fold wrong block count": lambda m: F(m).fold(m.ones(1, 8, 8), (4, 4), 2),
}

SAMPLING = {
    "grid_sample bad mode": lambda m: F(m).grid_sample(
        x4(m), m.zeros(1, 2, 2, 2), mode="bad", align_corners=False
    ),
    "grid_sample bad padding_mode": lambda m: F(m).grid_sample(
        x4(m), m.zeros(1, 2, 2, 2), padding_mode="bad", align_corners=False
    ),
    "grid_sample grid's last size": lambda m: F(m).grid_sample(
        x4(m), m.zeros(1, 2, 2, 3), align_corners=False
    ),
    "grid_sample batch mismatch": lambda m: F(m).grid_sample(
        x4(m), m.zeros(2, 2, 2, 2), align_corners=False
    ),
    "grid_sample 3-D input": lambda m: F(m).grid_sample(
        m.ones(2, 4, 4), m.zeros(2, 2, 2), align_corners=False
    ),
    "grid_sample bicubic 5-D": lambda m: F(m).grid_sample(
        m.ones(1, 2, 4, 4, 4), m.zeros(1, 2, 2, 2, 3), mode="bicubic", align_corners=False
    ),
    "grid_sample empty input": lambda m: F(m).grid_sample(
        m.ones(1, 2, 0, 4), m.zeros(1, 2, 2, 2), align_corners=False
    ),
    "affine_grid 3-D size": lambda m: F(m).affine_grid(m.zeros(1, 2, 3), (1, 2, 4), False),
    "affine_grid theta for 3-D size": lambda m: F(m).affine_grid(
        m.zeros(1, 2, 3), (1, 2, 4, 4, 4), False
    ),
    "affine_grid theta shape": lambda m: F(m).affine_grid(m.zeros(1, 2, 4), (1, 2, 4, 4), False),
    "affine_grid batch size": lambda m: F(m).affine_grid(m.zeros(2, 2, 3), (1, 2, 4, 4), False),
    "affine_grid integer theta": lambda m: F(m).affine_grid(
        m.zeros(1, 2, 3, dtype=m.int64), (1, 2, 4, 4), False
    ),
    "affine_grid empty size": lambda m: F(m).affine_grid(m.zeros(1, 2, 3), (1, 2, 0, 4), False),
    "interpolate no size": lambda m: F(m).interpolate(x4(m)),
    "interpolate size and scale": lambda m: F(m).interpolate(x4(m), size=2, scale_factor=2),
    "interpolate bad mode": lambda m: F(m).interpolate(x4(m), size=2, mode="bad"),
    "interpolate three sizes": lambda m: F(m).interpolate(x4(m), size=(2, 2, 2)),
    "interpolate three scales": lambda m: F(m).interpolate(x4(m), scale_factor=(2, 2, 2)),
    "interpolate linear on 4-D": lambda m: F(m).interpolate(x4(m), size=2, mode="linear"),
    "interpolate trilinear on 4-D": lambda m: F(m).interpolate(x4(m), size=2, mode="trilinear"),
    "interpolate nearest align_corners": lambda m: F(m).interpolate(
        x4(m), size=2, align_corners=True
    ),
    "interpolate 2-D input": lambda m: F(m).interpolate(m.ones(2, 3), size=2),
    "interpolate antialias 3-D": lambda m: F(m).interpolate(
        x3(m), size=2, mode="linear", antialias=True
    ),
    "interpolate zero size": lambda m: F(m).interpolate(x4(m), size=0),
    "interpolate negative scale": lambda m: F(m).interpolate(x4(m), scale_factor=-1.0),
    "interpolate scale to nothing": lambda m: F(m).interpolate(x4(m), scale_factor=0.1),
    "interpolate empty input": lambda m: F(m).interpolate(m.ones(1, 2, 0, 4), size=2),
    "upsample bad mode": lambda m: F(m).upsample(x4(m), size=2, mode="bad"),
    "upsample_bilinear 3-D": lambda m: F(m).upsample_bilinear(x3(m), size=2),
    "upsample_nearest size and scale": lambda m: F(m).upsample_nearest(
        x4(m), size=2, scale_factor=2
    ),
}


def idx(m: Any, *shape: int, fill: int = 0) -> Any:
    return m.full(shape, fill, dtype=m.int64)


POOLING = {
    "max_unpool2d output_size too small": lambda m: F(m).max_unpool2d(
        x4(m), idx(m, 1, 2, 4, 4), 2, output_size=(3, 3)
    ),
    "max_unpool2d output_size too big": lambda m: F(m).max_unpool2d(
        x4(m), idx(m, 1, 2, 4, 4), 2, output_size=(20, 20)
    ),
    "max_unpool2d output_size length": lambda m: F(m).max_unpool2d(
        x4(m), idx(m, 1, 2, 4, 4), 2, output_size=(1, 2, 3, 8, 8)
    ),
    "max_unpool2d float indices": lambda m: F(m).max_unpool2d(x4(m), m.zeros(1, 2, 4, 4), 2),
    "max_unpool2d indices shape": lambda m: F(m).max_unpool2d(x4(m), idx(m, 1, 2, 3, 4), 2),
    "max_unpool2d 2-D input": lambda m: F(m).max_unpool2d(m.ones(4, 4), idx(m, 4, 4), 2),
    "max_unpool2d index out of range": lambda m: F(m).max_unpool2d(
        x4(m), idx(m, 1, 2, 4, 4, fill=100), 2
    ),
    "fractional_max_pool2d no size": lambda m: F(m).fractional_max_pool2d(x4(m), 2),
    "fractional_max_pool2d 2-D input": lambda m: F(m).fractional_max_pool2d(
        m.ones(2, 4), 2, output_size=2
    ),
    "fractional_max_pool2d output too big": lambda m: F(m).fractional_max_pool2d(
        x4(m), 2, output_size=4
    ),
    "fractional_max_pool2d kernel too big": lambda m: F(m).fractional_max_pool2d(
        x4(m), 5, output_size=2
    ),
    "fractional_max_pool2d three kernel sizes": lambda m: F(m).fractional_max_pool2d(
        x4(m), (2, 2, 2), output_size=2
    ),
    "fractional_max_pool2d three output sizes": lambda m: F(m).fractional_max_pool2d(
        x4(m), 2, output_size=(2, 2, 2)
    ),
    "fractional_max_pool2d ratio count": lambda m: F(m).fractional_max_pool2d(
        x4(m), 2, output_ratio=(0.5, 0.5, 0.5)
    ),
    "fractional_max_pool2d ratio too big": lambda m: F(m).fractional_max_pool2d(
        x4(m), 2, output_ratio=(1.5, 0.5)
    ),
    "fractional_max_pool2d samples shape": lambda m: F(m).fractional_max_pool2d(
        x4(m), 2, output_size=2, _random_samples=m.rand(1, 2, 3)
    ),
    "fractional_max_pool2d 5-D input": lambda m: F(m).fractional_max_pool2d(
        m.ones(2, 3, 4, 4, 4), 2, output_size=2
    ),
    "fractional_max_pool3d kernel too big": lambda m: F(m).fractional_max_pool3d(
        x4(m), 2, output_size=2
    ),
    "local_response_norm 2-D input": lambda m: F(m).local_response_norm(m.ones(2, 3), 2),
    "local_response_norm zero size": lambda m: F(m).local_response_norm(x4(m), 0),
    "local_response_norm negative size": lambda m: F(m).local_response_norm(x4(m), -1),
    "pixel_shuffle channels": lambda m: F(m).pixel_shuffle(x4(m), 3),
    "pixel_shuffle 2-D": lambda m: F(m).pixel_shuffle(m.ones(2, 3), 2),
    "pixel_shuffle zero factor": lambda m: F(m).pixel_shuffle(x4(m), 0),
    "pixel_unshuffle height": lambda m: F(m).pixel_unshuffle(x4(m), 3),
    "pixel_unshuffle zero factor": lambda m: F(m).pixel_unshuffle(x4(m), 0),
    "pixel_unshuffle 2-D": lambda m: F(m).pixel_unshuffle(m.ones(4, 4), 2),
    "channel_shuffle channels": lambda m: F(m).channel_shuffle(m.ones(1, 3, 4, 4), 2),
    "channel_shuffle zero groups": lambda m: F(m).channel_shuffle(x4(m), 0),
    "channel_shuffle 1-D": lambda m: F(m).channel_shuffle(m.ones(4), 2),
}


def vec(m: Any, n: int) -> Any:
    return m.ones(n)


def mat(m: Any, columns: int = 4) -> Any:
    return m.ones(3, columns)


def labels(m: Any, *values: int) -> Any:
    return m.tensor(values or (0, 1, 2))


def sdpa(m: Any, q: tuple, k: tuple, v: tuple, **kwargs: Any) -> Any:
    return F(m).scaled_dot_product_attention(m.ones(q), m.ones(k), m.ones(v), **kwargs)


def ctc(m: Any, input_lengths: list, target_lengths: list, **kwargs: Any) -> Any:
    log_probs = m.zeros(5, 2, 4).log_softmax(2)
    targets = m.ones(2, 3, dtype=m.int64)
    lengths = (m.tensor(input_lengths), m.tensor(target_lengths))
    return F(m).ctc_loss(log_probs, targets, *lengths, **kwargs)


LOSSES = {
    "margin_ranking_loss shapes": lambda m: F(m).margin_ranking_loss(
        vec(m, 3), vec(m, 4), vec(m, 3)
    ),
    "margin_ranking_loss reduction": lambda m: F(m).margin_ranking_loss(
        vec(m, 3), vec(m, 3), vec(m, 3), reduction="bad"
    ),
    "hinge_embedding_loss shapes": lambda m: F(m).hinge_embedding_loss(vec(m, 3), vec(m, 4)),
    "soft_margin_loss shapes": lambda m: F(m).soft_margin_loss(vec(m, 3), vec(m, 4)),
    "multilabel_soft_margin_loss shapes": lambda m: F(m).multilabel_soft_margin_loss(
        mat(m), mat(m, 5)
    ),
    "multilabel_soft_margin_loss weight": lambda m: F(m).multilabel_soft_margin_loss(
        mat(m), mat(m), weight=vec(m, 3)
    ),
    "multi_margin_loss p=3": lambda m: F(m).multi_margin_loss(mat(m), labels(m), p=3),
    "multi_margin_loss target size": lambda m: F(m).multi_margin_loss(mat(m), labels(m, 0, 1)),
    "multi_margin_loss weight size": lambda m: F(m).multi_margin_loss(
        mat(m), labels(m), weight=vec(m, 3)
    ),
    "multi_margin_loss target range": lambda m: F(m).multi_margin_loss(mat(m), labels(m, 0, 1, 7)),
    "multi_margin_loss 3-D input": lambda m: F(m).multi_margin_loss(m.ones(2, 3, 4), labels(m)),
    "multilabel_margin_loss target size": lambda m: F(m).multilabel_margin_loss(mat(m), labels(m)),
    "cosine_embedding_loss shapes": lambda m: F(m).cosine_embedding_loss(
        mat(m), mat(m, 5), vec(m, 3)
    ),
    "cosine_embedding_loss target": lambda m: F(m).cosine_embedding_loss(mat(m), mat(m), vec(m, 4)),
    "cosine_embedding_loss 3-D": lambda m: F(m).cosine_embedding_loss(
        m.ones(2, 3, 4), m.ones(2, 3, 4), vec(m, 2)
    ),
    "triplet_margin_loss shapes": lambda m: F(m).triplet_margin_loss(mat(m), mat(m), mat(m, 5)),
    "triplet_margin_loss margin": lambda m: F(m).triplet_margin_loss(
        mat(m), mat(m), mat(m), margin=0
    ),
    "triplet_margin_loss ranks": lambda m: F(m).triplet_margin_loss(vec(m, 4), mat(m), mat(m)),
    "triplet_margin_with_distance_loss margin": lambda m: F(m).triplet_margin_with_distance_loss(
        mat(m), mat(m), mat(m), margin=-1
    ),
    "pairwise_distance shapes": lambda m: F(m).pairwise_distance(mat(m), mat(m, 5)),
    "cosine_similarity shapes": lambda m: F(m).cosine_similarity(mat(m), mat(m, 5)),
    "cosine_similarity dim": lambda m: F(m).cosine_similarity(mat(m), mat(m), dim=3),
    "pdist 3-D": lambda m: F(m).pdist(m.ones(2, 3, 4)),
    "pdist integer": lambda m: F(m).pdist(m.ones(3, 4, dtype=m.int64)),
    "pdist negative p": lambda m: F(m).pdist(mat(m), p=-1),
    "mse_loss reduction": lambda m: F(m).mse_loss(mat(m), mat(m), reduction="bad"),
    "mse_loss shapes": lambda m: F(m).mse_loss(mat(m), mat(m, 5)),
    "l1_loss shapes": lambda m: F(m).l1_loss(mat(m), m.ones(2, 4)),
    "mse_loss weight shape": lambda m: F(m).mse_loss(mat(m), mat(m), weight=vec(m, 3)),
    "huber_loss weight shape": lambda m: F(m).huber_loss(mat(m), mat(m), weight=m.ones(2, 4)),
    "smooth_l1_loss negative beta": lambda m: F(m).smooth_l1_loss(mat(m), mat(m), beta=-1.0),
    "huber_loss zero delta": lambda m: F(m).huber_loss(mat(m), mat(m), delta=0.0),
    "nll_loss target range": lambda m: F(m).nll_loss(mat(m), labels(m, 0, 1, 9)),
    "nll_loss batch mismatch": lambda m: F(m).nll_loss(mat(m), labels(m, 0, 1)),
    "nll_loss weight size": lambda m: F(m).nll_loss(mat(m), labels(m), weight=vec(m, 3)),
    "nll_loss float target": lambda m: F(m).nll_loss(mat(m), labels(m).float()),
    "nll_loss reduction": lambda m: F(m).nll_loss(mat(m), labels(m), reduction="bad"),
    "cross_entropy target range": lambda m: F(m).cross_entropy(mat(m), labels(m, 0, 1, -5)),
    "cross_entropy batch mismatch": lambda m: F(m).cross_entropy(mat(m), labels(m, 0, 1)),
    "cross_entropy label_smoothing": lambda m: F(m).cross_entropy(
        mat(m), labels(m), label_smoothing=1.5
    ),
    "cross_entropy probabilities shape": lambda m: F(m).cross_entropy(mat(m), mat(m, 5)),
    "cross_entropy weight size": lambda m: F(m).cross_entropy(mat(m), labels(m), weight=vec(m, 3)),
    "cross_entropy spatial target": lambda m: F(m).cross_entropy(
        m.ones(3, 4, 5), m.zeros(3, 4, dtype=m.int64)
    ),
    "binary_cross_entropy shapes": lambda m: F(m).binary_cross_entropy(
        vec(m, 3) / 2, vec(m, 4) / 2
    ),
    "binary_cross_entropy out of range": lambda m: F(m).binary_cross_entropy(
        vec(m, 3) * 3, vec(m, 3) / 2
    ),
    "binary_cross_entropy weight": lambda m: F(m).binary_cross_entropy(
        vec(m, 3) / 2, vec(m, 3) / 2, weight=vec(m, 4)
    ),
    "binary_cross_entropy_with_logits shapes": lambda m: F(m).binary_cross_entropy_with_logits(
        vec(m, 3), vec(m, 4)
    ),
    "binary_cross_entropy_with_logits pos_weight": lambda m: F(m).binary_cross_entropy_with_logits(
        vec(m, 3), vec(m, 3), pos_weight=vec(m, 4)
    ),
    "kl_div shapes": lambda m: F(m).kl_div(mat(m), mat(m, 5)),
    "kl_div reduction": lambda m: F(m).kl_div(mat(m), mat(m), reduction="bad"),
    "poisson_nll_loss shapes": lambda m: F(m).poisson_nll_loss(mat(m), mat(m, 5)),
    "gaussian_nll_loss negative var": lambda m: F(m).gaussian_nll_loss(mat(m), mat(m), -mat(m)),
    "gaussian_nll_loss var size": lambda m: F(m).gaussian_nll_loss(mat(m), mat(m), mat(m, 5)),
    "gaussian_nll_loss reduction": lambda m: F(m).gaussian_nll_loss(
        mat(m), mat(m), mat(m), reduction="bad"
    ),
    "ctc_loss reduction": lambda m: ctc(m, [5, 5], [3, 3], reduction="bad"),
    "ctc_loss blank": lambda m: ctc(m, [5, 5], [3, 3], blank=7),
    "ctc_loss input length": lambda m: ctc(m, [6, 5], [3, 3]),
    "ctc_loss target length": lambda m: ctc(m, [5, 5], [4, 3]),
    "ctc_loss float lengths": lambda m: ctc(m, [5.0, 5.0], [3, 3]),
    "ctc_loss lengths size": lambda m: ctc(m, [5, 5, 5], [3, 3]),
}

ACTIVATIONS = {
    "dropout p>1": lambda m: F(m).dropout(mat(m), p=1.5),
    "dropout p<0": lambda m: F(m).dropout(mat(m), p=-0.1),
    "dropout1d 4-D": lambda m: F(m).dropout1d(m.ones(2, 3, 4, 5)),
    "dropout1d 1-D": lambda m: F(m).dropout1d(vec(m, 3), 0.5),
    "dropout2d 1-D": lambda m: F(m).dropout2d(vec(m, 3), 0.5),
    "dropout2d p=2": lambda m: F(m).dropout2d(m.ones(2, 3, 4, 5), p=2),
    "alpha_dropout p": lambda m: F(m).alpha_dropout(mat(m), p=1.5),
    "feature_alpha_dropout 1-D": lambda m: F(m).feature_alpha_dropout(vec(m, 3), 0.5, True),
    "feature_alpha_dropout p": lambda m: F(m).feature_alpha_dropout(mat(m), p=-1),
    "celu alpha=0": lambda m: F(m).celu(mat(m), alpha=0.0),
    "softshrink negative lambd": lambda m: F(m).softshrink(mat(m), -1.0),
    "rrelu lower > upper": lambda m: F(m).rrelu(mat(m), lower=0.5, upper=0.1),
    "gelu approximate": lambda m: F(m).gelu(mat(m), approximate="bad"),
    "prelu weight size": lambda m: F(m).prelu(mat(m), vec(m, 5)),
    "prelu 2-D weight": lambda m: F(m).prelu(mat(m), m.ones(2, 2)),
    "prelu 1-D input": lambda m: F(m).prelu(vec(m, 3), vec(m, 3)),
    "softmax dim": lambda m: F(m).softmax(mat(m), dim=3),
    "log_softmax dim": lambda m: F(m).log_softmax(mat(m), dim=-3),
    "softmin dim": lambda m: F(m).softmin(mat(m), dim=2),
    "gumbel_softmax dim": lambda m: F(m).gumbel_softmax(mat(m), dim=5),
    "glu odd size": lambda m: F(m).glu(mat(m, 5)),
    "glu dim": lambda m: F(m).glu(mat(m), dim=2),
    "glu scalar": lambda m: F(m).glu(m.ones(())),
    "normalize dim": lambda m: F(m).normalize(mat(m), dim=3),
    "hardtanh min > max": lambda m: F(m).hardtanh(mat(m), 1.0, -1.0),
    "threshold value type": lambda m: F(m).threshold(mat(m), 1.0, "a"),
    "linear shapes": lambda m: F(m).linear(mat(m), m.ones(5, 5)),
    "linear bias size": lambda m: F(m).linear(mat(m), m.ones(5, 4), vec(m, 4)),
    "linear 3-D weight": lambda m: F(m).linear(mat(m), m.ones(2, 3, 4)),
    "bilinear input2 size": lambda m: F(m).bilinear(mat(m), mat(m), m.ones(5, 4, 5)),
    "bilinear 2-D weight": lambda m: F(m).bilinear(mat(m), mat(m), m.ones(4, 4)),
    "bilinear batch": lambda m: F(m).bilinear(mat(m), m.ones(2, 4), m.ones(5, 4, 4)),
    "bilinear bias": lambda m: F(m).bilinear(mat(m), mat(m), m.ones(5, 4, 4), vec(m, 3)),
    "sdpa key size": lambda m: sdpa(m, (2, 3, 4), (2, 3, 5), (2, 3, 4)),
    "sdpa value length": lambda m: sdpa(m, (2, 3, 4), (2, 3, 4), (2, 5, 4)),
    "sdpa mask and causal": lambda m: sdpa(
        m, (2, 3, 4), (2, 3, 4), (2, 3, 4), attn_mask=m.ones(3, 3, dtype=m.bool), is_causal=True
    ),
    "sdpa mask shape": lambda m: sdpa(m, (2, 3, 4), (2, 3, 4), (2, 3, 4), attn_mask=m.ones(4, 4)),
    "sdpa 1-D": lambda m: sdpa(m, (4,), (4,), (4,)),
    "sdpa dropout_p": lambda m: sdpa(m, (2, 3, 4), (2, 3, 4), (2, 3, 4), dropout_p=2.0),
    "sdpa heads": lambda m: sdpa(m, (1, 3, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4)),
    "sdpa gqa heads": lambda m: sdpa(m, (1, 3, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4), enable_gqa=True),
    # mixed float dtypes: refused whether the backend fuses the composite (layer_norm, sdpa)
    # or decomposes it (instance_norm on numpy)
    "layer_norm mixed dtypes": lambda m: F(m).layer_norm(
        m.ones(2, 4, dtype=m.float64), (4,), m.ones(4), m.zeros(4)
    ),
    "instance_norm mixed dtypes": lambda m: F(m).instance_norm(
        m.ones(2, 4, 3, dtype=m.float64), weight=m.ones(4), bias=m.zeros(4)
    ),
    "sdpa mixed dtypes": lambda m: F(m).scaled_dot_product_attention(
        m.ones(2, 3, 4, dtype=m.float64), m.ones(2, 3, 4), m.ones(2, 3, 4)
    ),
}

LAYERS = {
    "Conv2d zero groups": lambda m: m.nn.Conv2d(4, 4, 3, groups=0),
    "Conv2d in_channels and groups": lambda m: m.nn.Conv2d(3, 4, 3, groups=2),
    "Conv2d out_channels and groups": lambda m: m.nn.Conv2d(4, 3, 3, groups=2),
    "Conv2d padding_mode": lambda m: m.nn.Conv2d(2, 4, 3, padding_mode="bad"),
    "Conv2d padding string": lambda m: m.nn.Conv2d(2, 4, 3, padding="bad"),
    "Conv2d same and strided": lambda m: m.nn.Conv2d(2, 4, 3, padding="same", stride=2),
    "ConvTranspose2d padding_mode": lambda m: m.nn.ConvTranspose2d(2, 4, 3, padding_mode="reflect"),
    "ConvTranspose2d output_size range": lambda m: m.nn.ConvTranspose2d(2, 4, 3, stride=2)(
        x4(m), output_size=(20, 20)
    ),
    "ConvTranspose2d output_size length": lambda m: m.nn.ConvTranspose2d(2, 4, 3, stride=2)(
        x4(m), output_size=(1, 2, 3, 9, 9)
    ),
    "LazyConv2d rank": lambda m: m.nn.LazyConv2d(4, 3)(m.ones(2, 3)),
    "LazyConv1d groups": lambda m: m.nn.LazyConv1d(2, 3, groups=2)(m.ones(1, 3, 5)),
    "Fold channels": lambda m: m.nn.Fold((4, 4), 2)(m.ones(1, 7, 9)),
    "Unfold stride": lambda m: m.nn.Unfold(2, stride=0)(x4(m)),
    "Upsample size and scale": lambda m: m.nn.Upsample(size=2, scale_factor=2)(x4(m)),
    "Upsample mode": lambda m: m.nn.Upsample(size=2, mode="bad")(x4(m)),
    "PixelShuffle channels": lambda m: m.nn.PixelShuffle(3)(x4(m)),
    "PixelUnshuffle zero": lambda m: m.nn.PixelUnshuffle(0)(x4(m)),
    "ChannelShuffle channels": lambda m: m.nn.ChannelShuffle(2)(m.ones(1, 3, 2, 2)),
    "ChannelShuffle zero groups": lambda m: m.nn.ChannelShuffle(0)(x4(m)),
    "ReflectionPad2d too much": lambda m: m.nn.ReflectionPad2d(5)(x4(m)),
    "ReflectionPad2d 5-D": lambda m: m.nn.ReflectionPad2d(1)(m.ones(4, 4, 4, 4, 4)),
    "ZeroPad2d 1-D": lambda m: m.nn.ZeroPad2d(1)(vec(m, 4)),
    "ReplicationPad3d 2-D": lambda m: m.nn.ReplicationPad3d(1)(m.ones(2, 3)),
    "CircularPad2d 5-D": lambda m: m.nn.CircularPad2d(1)(m.ones(4, 4, 4, 4, 4)),
    "ReflectionPad1d 1-D": lambda m: m.nn.ReflectionPad1d(1)(vec(m, 4)),
    "CircularPad1d wraps twice": lambda m: m.nn.CircularPad1d(3)(m.ones(1, 2, 2)),
    "CosineSimilarity dim": lambda m: m.nn.CosineSimilarity(dim=4)(mat(m), mat(m)),
    "MultiMarginLoss p": lambda m: m.nn.MultiMarginLoss(p=3),
    "MultiMarginLoss weight": lambda m: m.nn.MultiMarginLoss(weight=m.ones(2, 2)),
    "TripletMarginLoss margin": lambda m: m.nn.TripletMarginLoss(margin=0),
    "TripletMarginWithDistanceLoss margin": lambda m: m.nn.TripletMarginWithDistanceLoss(margin=-1),
    "MSELoss reduction": lambda m: m.nn.MSELoss(reduction="bad")(mat(m), mat(m)),
    "CrossEntropyLoss label_smoothing": lambda m: m.nn.CrossEntropyLoss(label_smoothing=2)(
        mat(m), labels(m)
    ),
    "GELU approximate": lambda m: m.nn.GELU("bad")(mat(m)),
    "Hardtanh min > max": lambda m: m.nn.Hardtanh(1.0, -1.0),
    "Softmax2d 2-D": lambda m: m.nn.Softmax2d()(mat(m)),
    "Softmax dim": lambda m: m.nn.Softmax(dim=5)(mat(m)),
    "RReLU bounds": lambda m: m.nn.RReLU(0.5, 0.1)(mat(m)),
    "CELU zero alpha": lambda m: m.nn.CELU(0.0)(mat(m)),
    "Softshrink negative": lambda m: m.nn.Softshrink(-1.0)(mat(m)),
    "PReLU channels": lambda m: m.nn.PReLU(3)(mat(m)),
    "GLU odd size": lambda m: m.nn.GLU()(mat(m, 5)),
    "Dropout p": lambda m: m.nn.Dropout(1.5),
    "Dropout2d p": lambda m: m.nn.Dropout2d(-1),
    "AlphaDropout p": lambda m: m.nn.AlphaDropout(2),
    "FeatureAlphaDropout p": lambda m: m.nn.FeatureAlphaDropout(1.2),
    "Dropout1d 4-D": lambda m: m.nn.Dropout1d(0.5)(m.ones(2, 3, 4, 5)),
}

CASES: dict[str, Callable[[Any], Any]] = {
    **CONV,
    **SAMPLING,
    **POOLING,
    **LOSSES,
    **ACTIVATIONS,
    **LAYERS,
}


@pytest.mark.parametrize("call", CASES.values(), ids=CASES.keys())
def test_error_type_like_torch(call: Callable[[Any], Any]) -> None:
    raises_like_torch(call)
