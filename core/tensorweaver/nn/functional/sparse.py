"""Index-based layers: ``embedding`` and ``one_hot``.

``embedding`` is ``index_select`` on the weight rows, so its gradient is ``index_add`` of
the output gradient; rows read at ``padding_idx`` pass a detached copy, so that row gets
no gradient. The indices are checked once, up front, with PyTorch's error classes.

``sparse=True`` gives the same gradient values as PyTorch's sparse gradient, stored dense
(the core has no sparse layout): rows not looked up are zero, which ``optim.SparseAdam``
treats as absent. ``scale_grad_by_freq`` divides each row's gradient by how often its index
occurs in the batch, as PyTorch does.
"""

from __future__ import annotations

import tensorweaver as tw
from tensorweaver.ops import index as ix
from tensorweaver.ops.bounds import check_index, extrema
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.tensor import Tensor


def _renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale, in place, the rows of ``weight`` at ``indices`` whose norm exceeds ``max_norm``
    down to ``max_norm``, as PyTorch does."""
    with tw.no_grad():
        rows = weight.index_select(0, indices)
        norms = rows.norm(p=norm_type, dim=1, keepdim=True)
        scale = tw.where(norms > max_norm, max_norm / (norms + 1e-7), tw.ones_like(norms))
        weight[indices] = rows * scale


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """The rows of ``(num_embeddings, dim)`` ``weight`` at the integer ``input``, shaped
    ``(*input.shape, dim)``."""
    if weight.dim() != 2:
        raise ValueError(
            f"embedding: weight must be (num_embeddings, embedding_dim), got {tuple(weight.shape)}"
        )
    size = weight.shape[0]
    if input.dtype not in (tw.int64, tw.int32):
        raise RuntimeError(
            f"embedding: expected int64 or int32 indices, got {input.dtype.name}; use .long()"
        )
    indices = input.reshape(-1).long()
    check_index("embedding()", indices, size, 0, error=IndexError)  # PyTorch's class
    if max_norm is not None:
        _renorm_(weight, indices, max_norm, norm_type)
    if padding_idx is not None:
        if not -size <= padding_idx < size:
            raise ValueError(
                f"embedding: padding_idx {padding_idx} is out of range for {size} embeddings"
            )
        padding_idx %= size
    rows = fused_or_reference("embedding", embedding_reference, (weight, indices), padding_idx)
    if scale_grad_by_freq and rows.requires_grad:
        if sparse:  # PyTorch raises this when the backward runs; here before it is recorded
            raise RuntimeError(
                "embedding_backward: scale_grad_by_freq not supported with sparse gradients"
            )
        counts = tw.bincount(indices, minlength=size).index_select(0, indices)
        rows = _GradientScale.apply(rows, (1.0 / counts.to(rows.dtype)).unsqueeze(1))
    return rows.reshape(*input.shape, weight.shape[1])


class _GradientScale(tw.autograd.Function):
    """Identity forward; the gradient multiplied by ``scale`` (not differentiated)."""

    @staticmethod
    def forward(ctx, rows: Tensor, scale: Tensor) -> Tensor:
        ctx.save_for_backward(scale)
        return rows

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        (scale,) = ctx.saved_tensors
        return grad * scale, None


def embedding_reference(weight: Tensor, indices: Tensor, padding_idx: int | None) -> Tensor:
    """The decomposition of the ``embedding`` composite: gathered rows, the padding row's
    gradient cut."""
    rows = ix.take_along(weight, 0, indices)
    if padding_idx is None:
        return rows
    keep = (indices != padding_idx).unsqueeze(1)
    return tw.where(keep, rows, rows.detach())


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape ``(*tensor.shape, num_classes)`` with a 1 at each index;
    ``num_classes=-1`` means one more than the largest index."""
    if tensor.dtype is not tw.int64:
        raise RuntimeError(
            f"one_hot: expected an int64 index tensor, got {tensor.dtype.name}; use .long()"
        )
    bounds = extrema(tensor)
    if num_classes == -1:
        if bounds is None:
            raise RuntimeError(
                "one_hot: cannot infer num_classes from an empty tensor; pass num_classes"
            )
        num_classes = bounds[1] + 1
    if bounds is not None and bounds[0] < 0:
        raise RuntimeError(f"one_hot: class values must be non-negative, got {bounds[0]}")
    if bounds is not None and bounds[1] >= num_classes:
        raise RuntimeError(
            f"one_hot: class values must be smaller than num_classes ({num_classes}), got "
            f"{bounds[1]}"
        )
    return (tensor.unsqueeze(-1) == tw.arange(num_classes, device=tensor.device)).long()
