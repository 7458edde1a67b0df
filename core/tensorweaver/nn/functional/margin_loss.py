"""Margin and embedding losses: ranking, hinge, multi-class and multi-label margins, soft
margins, triplets and cosine embeddings, with PyTorch's formulas, shapes and checks.

``reduction`` is ``'mean'``, ``'sum'`` or ``'none'``; the deprecated ``size_average``/``reduce``
pair is honoured as in :mod:`tensorweaver.nn.functional.loss`.
"""

from __future__ import annotations

from typing import Callable

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.nn.functional.activation import logsigmoid
from tensorweaver.nn.functional.distance import pairwise_distance
from tensorweaver.nn.functional.loss import (
    _reduce,
    _reduction,
    _refuse_differentiable,
    _saved_operands,
)
from tensorweaver.ops import index as ix
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.bounds import extrema, inside
from tensorweaver.tensor import Tensor


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -y * (x1 - x2) + margin) for targets y of ±1."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input1, input2, target = float32_operands(input1, input2, target)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(
            "margin_ranking_loss: all input tensors should have the same number of dimensions, "
            f"got input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
            f"{tuple(target.shape)}"
        )
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "margin_ranking_loss")


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1 (both terms for other targets, as in
    PyTorch)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target = float32_operands(input, target)
    zero = tw.zeros_like(input)
    loss = tw.where(target != 1, (margin - input).clamp(min=0), zero) + tw.where(
        target != -1, input, zero
    )
    return _reduce(loss, _reduction(size_average, reduce, reduction), "hinge_embedding_loss")


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """log(1 + exp(-y * x)) for targets y of ±1."""
    if target.requires_grad and tw.is_grad_enabled():  # PyTorch's kernel has no target gradient
        raise RuntimeError(
            "soft_margin_loss: the function is not differentiable with respect to argument "
            "'target', which requires grad; pass target.detach()"
        )
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target = float32_operands(input, target)
    loss = (-input * target).exp().log1p()
    if loss.dtype != input.dtype and input.dtype.is_floating_point:
        loss = loss.to(input.dtype)  # PyTorch's kernel writes the loss in the input's type
    loss = _reduce(loss, _reduction(size_average, reduce, reduction), "soft_margin_loss")
    name = "SoftMarginLossBackward0"  # (one edge: PyTorch's target is not differentiable)
    return _saved_operands(labelled(loss, name, input), name, (input, target))


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Per-class binary cross-entropy on logits, (optionally weighted and) averaged over the
    classes, the last axis: one loss per sample."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    dim = input.dim() - 1
    loss = loss.sum(dim) / input.shape[dim]
    return _reduce(loss, _reduction(size_average, reduce, reduction), "multilabel_soft_margin_loss")


def _margin_rows(input: Tensor, fn: str) -> tuple[Tensor, int]:
    """A vector or matrix input as ``(N, C)`` rows (a scalar is one row of one class)."""
    if input.dim() > 2 or input.numel() == 0 and input.dim() == 1:
        raise RuntimeError(
            f"{fn}: expected a non-empty vector (C,) or a matrix (N, C), got shape "
            f"{tuple(input.shape)}"
        )
    classes = input.shape[-1] if input.dim() else 1
    return input.reshape(-1, classes), classes


def _check_class_range(target: Tensor, low: int, classes: int, fn: str) -> None:
    bounds = extrema(target, inside(low, classes - 1))
    if bounds is not None and (bounds[0] < low or bounds[1] >= classes):
        bad = bounds[0] if bounds[0] < low else bounds[1]
        raise RuntimeError(
            f"{fn}: target {bad} is out of range: targets must lie in [{low}, {classes})"
        )


def _hinge(z: Tensor) -> Tensor:
    """``z`` where it is positive, else 0, as PyTorch's multi-class margin kernels test
    ``z > 0``: no gradient at exactly 0 (``clamp`` passes one there), and a NaN margin
    counts as 0."""
    return tw.where(z > 0, z, 0.0)


def _known_reduction(reduction: str, fn: str) -> str:
    """``reduction``, checked before the targets as PyTorch's Python wrapper checks it."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(
            f"{fn}: {reduction} is not a valid value for reduction; use 'mean', 'sum' or 'none'"
        )
    return reduction


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """sum over classes i != y of max(0, margin - x[y] + x[i]) ** p (times ``weight[y]``),
    divided by the number of classes, for each ``(C,)`` row and class index y."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    reduction = _known_reduction(_reduction(size_average, reduce, reduction), "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p}")
    if weight is not None and weight.dim() != 1:  # PyTorch's Python check, before the targets'
        raise ValueError(
            f"multi_margin_loss: weight must be one-dimensional, got shape {tuple(weight.shape)}"
        )
    rows, classes = _margin_rows(input, "multi_margin_loss")
    batch = rows.shape[0]
    if target.dtype is not tw.int64:
        raise RuntimeError(
            f"multi_margin_loss: expected int64 class targets, got {target.dtype.name}; use .long()"
        )
    if target.numel() != batch or target.dim() > 1 or input.dim() == 2 and target.dim() != 1:
        raise RuntimeError(
            f"multi_margin_loss: target should be 1-D with one class per sample ({batch}), "
            f"got shape {tuple(target.shape)} for the input of shape {tuple(input.shape)}"
        )
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != classes):
        raise RuntimeError(
            f"multi_margin_loss: weight must hold one value per class ({classes}), got shape "
            f"{tuple(weight.shape)}"
        )
    _check_class_range(target, 0, classes, "multi_margin_loss")
    _refuse_differentiable(weight, "multi_margin_loss", "weight")
    index = target.reshape(-1, 1)
    z = _hinge(margin - rows.gather(1, index) + rows)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * ix.take_along(weight, 0, index.reshape(-1)).unsqueeze(1)
    own = index == tw.arange(classes, device=input.device)
    loss = (z.masked_fill(own, 0).sum(1) / classes).reshape(target.shape)
    name = "MultiMarginLossBackward0"  # (PyTorch's node saves the input, target and weight)
    loss = labelled(_reduce(loss, reduction, "multi_margin_loss"), name, input)
    return _saved_operands(loss, name, (input, target, weight))


def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])),
    divided by the number of classes. Each target row lists class indices up to its first
    -1."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target = float32_operands(input, target)
    reduction = _known_reduction(
        _reduction(size_average, reduce, reduction), "multilabel_margin_loss"
    )
    rows, classes = _margin_rows(input, "multilabel_margin_loss")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"multilabel_margin_loss: target of shape {tuple(target.shape)} must have the "
            f"input's shape {tuple(input.shape)}"
        )
    if target.dtype is not tw.int64:
        raise RuntimeError(
            f"multilabel_margin_loss: expected int64 class targets, got {target.dtype.name}; "
            "use .long()"
        )
    _check_class_range(target, -1, classes, "multilabel_margin_loss")
    labels = target.reshape(rows.shape)
    listed = (labels == -1).long().cumsum(1) == 0  # before the first -1
    safe = labels.masked_fill(~listed, 0)
    is_label = (safe.unsqueeze(2) == tw.arange(classes, device=input.device)) & listed.unsqueeze(2)
    is_target = is_label.any(1)
    hinge = _hinge(1 - rows.gather(1, safe).unsqueeze(2) + rows.unsqueeze(1))
    counted = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = hinge.masked_fill(~counted, 0).sum((1, 2)) / classes
    loss = _reduce(loss.reshape(input.shape[:-1]), reduction, "multilabel_margin_loss")
    name = "MultilabelMarginLossBackward0"  # (PyTorch's node saves the input and target)
    return _saved_operands(labelled(loss, name, input), name, (input, target))


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1; rows of
    ``(N, D)`` inputs with ``(N,)`` targets, or ``(D,)`` inputs with a scalar target."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input1, input2, target = float32_operands(input1, input2, target)
    dim = target.dim()
    if dim > 1:
        raise RuntimeError(
            f"cosine_embedding_loss: expected a 0-D or 1-D target, got shape {tuple(target.shape)}"
        )
    if input1.dim() != dim + 1 or input2.dim() != dim + 1:
        raise RuntimeError(
            f"cosine_embedding_loss: a {dim}-D target expects {dim + 1}-D inputs, got shapes "
            f"{tuple(input1.shape)} and {tuple(input2.shape)}"
        )
    eps = 1e-12  # PyTorch's, added to each squared magnitude
    dot = (input1 * input2).sum(dim)
    denominator = (((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)).sqrt()
    cos = dot / denominator
    zero = tw.zeros_like(cos)
    loss = tw.where(target == 1, 1 - cos, zero) + tw.where(
        target == -1, (cos - margin).clamp(min=0), zero
    )
    return _reduce(loss, _reduction(size_average, reduce, reduction), "cosine_embedding_loss")


def _check_triplet(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float) -> None:
    if margin <= 0:
        raise ValueError(f"triplet margin loss: margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(
            "triplet margin loss: the anchor, positive, and negative tensors are expected to "
            f"have the same number of dimensions, but got: anchor {anchor.dim()}D, positive "
            f"{positive.dim()}D, and negative {negative.dim()}D inputs"
        )


def _triplet(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    distance: Callable[[Tensor, Tensor], Tensor],
    margin: float,
    swap: bool,
) -> Tensor:
    near = distance(anchor, positive)
    far = distance(anchor, negative)
    if swap:
        far = tw.minimum(far, distance(positive, negative))
    return (margin + near - far).clamp(min=0)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) with the p-norm ``pairwise_distance``; ``swap``
    takes d(a, n) as the smaller of d(a, n) and d(p, n)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        anchor, positive, negative = float32_operands(anchor, positive, negative)
    reduction = _reduction(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin)

    def distance(x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, p, eps)

    loss = _triplet(anchor, positive, negative, distance, margin, swap)
    return _reduce(loss, reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``triplet_margin_loss`` with any ``distance_function`` (default: ``pairwise_distance``)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(
            f"triplet_margin_with_distance_loss: {reduction!r} is not a valid value for reduction"
        )
    _check_triplet(anchor, positive, negative, margin)
    distance = pairwise_distance if distance_function is None else distance_function
    loss = _triplet(anchor, positive, negative, distance, margin, swap)
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")
