"""PyTorch's top-level spellings of ``nn.functional`` ops: ``torch.conv2d``, ``torch.dropout``,
``torch.layer_norm``, ``torch.batch_norm``, ``torch.embedding``, ... with the positional
signatures of those ATen functions, which differ from ``F``'s in places: ``dropout(input, p,
train)`` has no defaults, the norms take ``weight`` and ``bias`` before the running statistics
and end in a ``cudnn_enabled`` flag (ignored), ``embedding(weight, indices)`` takes the table
first, losses take ``reduction`` as an int (0 none, 1 mean, 2 sum), an empty ``stride`` of a
pool means the kernel size, and ``adaptive_max_pool1d`` returns ``(values, indices)``.

Loaded on first use of one of its names (``tensorweaver.__init__``'s ``_LAZY_ATTRS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorweaver.nn import functional as F
from tensorweaver.tensor import Tensor

# Where the signature is torch's already, the spelling is ``F``'s function itself.
conv1d = F.conv1d
conv2d = F.conv2d
conv3d = F.conv3d
conv_transpose1d = F.conv_transpose1d
conv_transpose2d = F.conv_transpose2d
conv_transpose3d = F.conv_transpose3d
rms_norm = F.rms_norm
prelu = F.prelu
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
channel_shuffle = F.channel_shuffle
cosine_similarity = F.cosine_similarity
pairwise_distance = F.pairwise_distance
bilinear = F.bilinear
selu_ = F.selu_

_REDUCTIONS = ("none", "mean", "sum")  # ATen's Reduction enum, in order


def _reduction(code: int, fn: str) -> str:
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 3:
        raise TypeError(
            f"{fn}(): argument 'reduction' must be an int 0 (none), 1 (mean) or 2 (sum), "
            f"got {code!r}; F.{fn} takes the names"
        )
    return _REDUCTIONS[code]


def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows ``indices`` of ``weight``; ``padding_idx`` -1 (ATen's "none") or a row whose
    gradient stays zero."""
    padding = None if padding_idx == -1 else padding_idx
    return F.embedding(
        indices, weight, padding, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse
    )


def _probability(p: float) -> float:
    """``p`` if it is a probability; else ATen's RuntimeError (``F``'s dropouts raise
    ValueError), in training or not."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return F.dropout(input, _probability(p), train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.dropout(input, _probability(p), train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return F.alpha_dropout(input, _probability(p), train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.alpha_dropout(input, _probability(p), train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return F.feature_alpha_dropout(input, _probability(p), train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return F.feature_alpha_dropout(input, _probability(p), train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (``input[n, c]``) with probability ``p`` and scale the rest by
    ``1 / (1 - p)``, for any input of 2 or more dimensions."""
    _probability(p)
    if train and input.ndim < 2:
        raise RuntimeError(
            f"Feature dropout requires at least 2 dimensions in the input, got shape "
            f"{tuple(input.shape)}"
        )
    if not train or p == 0:
        return input
    if p == 1:
        return input * 0.0
    from tensorweaver.ops.creation import full
    from tensorweaver.ops.sampling import bernoulli

    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = bernoulli(full(shape, 1.0 - p, dtype=input.dtype, device=input.device))
    return input * keep / (1.0 - p)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return input.copy_(feature_dropout(input, p, train))


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return F.threshold_(input, threshold, value)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu_(input, alpha)


def selu(input: Tensor) -> Tensor:
    return F.selu(input)


def _no_generator(generator: Any, fn: str) -> None:
    if generator is not None:
        raise NotImplementedError(
            f"{fn}(): a generator= is not supported here; seed with tw.manual_seed instead"
        )


def rrelu(
    input: Tensor,
    lower: float = 0.125,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    generator: Any = None,
) -> Tensor:
    _no_generator(generator, "rrelu")
    return F.rrelu(input, lower, upper, training)


def rrelu_(
    input: Tensor,
    lower: float = 0.125,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    generator: Any = None,
) -> Tensor:
    _no_generator(generator, "rrelu_")
    return F.rrelu_(input, lower, upper, training)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return F.hardshrink(input, lambd)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 1,
) -> Tensor:
    mode = _reduction(reduction, "binary_cross_entropy_with_logits")
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=mode, pos_weight=pos_weight
    )


def kl_div(
    input: Tensor, target: Tensor, reduction: int = 1, *, log_target: bool = False
) -> Tensor:
    """ATen's ``kl_div``: its mean is over every element, without ``F.kl_div``'s warning."""
    mode = _reduction(reduction, "kl_div")
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return loss if mode == "none" else loss.mean() if mode == "mean" else loss.sum()


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: int = 1,
    zero_infinity: bool = False,
) -> Tensor:
    mode = _reduction(reduction, "ctc_loss")
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, mode, zero_infinity)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 1
) -> Tensor:
    mode = _reduction(reduction, "cosine_embedding_loss")
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=mode)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 1
) -> Tensor:
    mode = _reduction(reduction, "hinge_embedding_loss")
    return F.hinge_embedding_loss(input, target, margin, reduction=mode)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 1
) -> Tensor:
    mode = _reduction(reduction, "margin_ranking_loss")
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=mode)


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    mode = _reduction(reduction, "poisson_nll_loss")
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=mode)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 1,
) -> Tensor:
    mode = _reduction(reduction, "triplet_margin_loss")
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=mode)


def _stride(stride: Any) -> Any:
    """ATen's empty ``stride`` (its default) means the kernel size, as ``F``'s None does."""
    return None if stride is None or (isinstance(stride, (tuple, list)) and not stride) else stride


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """``(values, indices)``: ATen's function always returns both."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """ATen's one convolution: ``conv{1,2,3}d`` or, ``transposed``, ``conv_transpose{1,2,3}d``
    by the number of spatial dimensions of ``input``."""
    rank = input.ndim - 2
    if rank not in (1, 2, 3):
        raise RuntimeError(
            f"convolution: expected a 3-D, 4-D or 5-D input (batch, channels, spatial...), "
            f"got shape {tuple(input.shape)}"
        )
    if transposed:
        op = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[rank - 1]
        return op(input, weight, bias, stride, padding, output_padding, groups, dilation)
    op = (F.conv1d, F.conv2d, F.conv3d)[rank - 1]
    return op(input, weight, bias, stride, padding, dilation, groups)


_INTERPOLATIONS = ("bilinear", "nearest", "bicubic")  # ATen's GridSamplerInterpolation
_PADDINGS = ("zeros", "border", "reflection")  # ATen's GridSamplerPadding


def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``F.grid_sample`` with ATen's int codes for ``mode`` and ``padding_mode``."""
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(
            f"grid_sampler(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 "
            f"(bicubic) and padding_mode 0 (zeros), 1 (border) or 2 (reflection), got "
            f"{interpolation_mode} and {padding_mode}"
        )
    mode, pad = _INTERPOLATIONS[interpolation_mode], _PADDINGS[padding_mode]
    return F.grid_sample(input, grid, mode, pad, align_corners)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    return F.affine_grid(theta, size, align_corners)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    return F.pad(input, pad, "constant", value)
