"""``linear_cross_entropy``: cross entropy of the logits of a linear layer, in one call.

PyTorch's chunked path (``options``) is a memory strategy for large vocabularies whose
answers equal the reference ``cross_entropy(linear(input, linear_weight), target)``; tw
always computes the reference, so ``options`` changes nothing here.
"""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.nn.functional.linear import linear
from tensorweaver.nn.functional.loss import cross_entropy
from tensorweaver.tensor import Tensor


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: Any = None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` for input
    ``(in_features)`` or ``(N, in_features)`` and ``linear_weight`` ``(C, in_features)``,
    or ``(C, d_1, ..., d_K, in_features)`` for a K-dimensional loss (batched input only).
    ``ignore_index`` None means -100 for class indices; it may not be given with class
    probabilities."""
    fn = "linear_cross_entropy"
    if input.dim() not in (1, 2):
        raise RuntimeError(f"{fn}: expected a 1-D or 2-D input, got shape {tuple(input.shape)}")
    if linear_weight.dim() < 2:
        raise RuntimeError(
            f"{fn}: expected linear_weight with at least 2 dimensions, got shape "
            f"{tuple(linear_weight.shape)}"
        )
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if linear_weight.shape[-1] != in_features:
        raise RuntimeError(
            f"{fn}: input {tuple(input.shape)} and linear_weight "
            f"{tuple(linear_weight.shape)} must agree in their last dimension (in_features)"
        )
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    logits_shape = (*batches, classes, *out_features)
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(
            f"{fn}: expected linear_bias of shape {(classes, *out_features)}, got "
            f"{tuple(linear_bias.shape)}"
        )
    if out_features and not batches:
        raise RuntimeError(
            f"{fn}: a K-dimensional loss (linear_weight {tuple(linear_weight.shape)}) needs a "
            f"batched input (N, {in_features}), got shape {tuple(input.shape)}"
        )
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError(f"{fn}: ignore_index cannot be given with class probabilities")
    rows = math.prod(out_features, start=classes)
    flat_bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = linear(input, linear_weight.reshape(rows, in_features), flat_bias)
    return cross_entropy(
        logits.reshape(logits_shape),
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=-100 if ignore_index is None else ignore_index,
        label_smoothing=label_smoothing,
    )
