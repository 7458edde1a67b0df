"""``linear`` and ``bilinear``: affine maps of the last axis."""

from __future__ import annotations

import math

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, SelfFirst
from tensorweaver.ops.apply import check_backends, labelled
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.linalg import autocast_operands
from tensorweaver.tensor import Tensor


def linear_reference(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """The decomposition of the ``linear`` composite, x @ weight^T + bias, as PyTorch's
    graph: ``addmm(bias, rows, weight.t())`` (its node's inputs in that order, so a hook on
    it sees theirs), ``rows`` the input as a matrix, the result viewed back."""
    transposed = weight.t()
    rows = x if x.dim() == 2 else x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    out = labelled(rows @ transposed + bias, "AddmmBackward0", bias, rows, transposed)
    return out if x.dim() == 2 else out.reshape(*x.shape[:-1], weight.shape[0])


def _refuse_non_tensors(*operands: object) -> None:
    """PyTorch's TypeError for the first operand of ``linear`` that is no tensor."""
    names = ("input", "weight", "bias")
    for position, (name, value) in enumerate(zip(names, operands), 1):
        if not isinstance(value, Tensor) and not (name == "bias" and value is None):
            raise TypeError(
                f"linear(): argument '{name}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}"
            )


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight^T + bias, for ``(out, in)`` (or ``(in,)``) weight."""
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor)) or not (
        bias is None or isinstance(bias, Tensor)
    ):
        _refuse_non_tensors(input, weight, bias)
    low = autocast_dtype()
    if low is not None:  # as PyTorch's autocast: every operand in the low dtype, first
        input, weight = autocast_operands(low, input, weight)
        if bias is not None:
            (bias,) = autocast_operands(low, bias)
    if (
        bias is not None
        and weight.dim() == 2
        and input.dim() >= 1
        and bias.dim() == 1
        and input.dtype is weight.dtype is bias.dtype
        and input.shape[-1] == weight.shape[1]
        and bias.shape[0] == weight.shape[0]
        # (else PyTorch's node is matmul's result plus the bias: told apart only where one
        # is recorded, as the layout costs more than the op on some backends)
        and (
            not (
                tw.is_grad_enabled()
                and (input.requires_grad or weight.requires_grad or bias.requires_grad)
            )
            or _fused_by_torch(input, bias)
        )
    ):
        if SAVED_TENSORS_HOOKS and tw.is_grad_enabled():
            # PyTorch's AddmmBackward0 packs its mat1 (the input as rows) and mat2
            # (weight.t()): the reference's matmul node packs those, in that order, and its
            # backward reads what unpack gives (a fused kernel's saved arrays pass no hook).
            check_backends("linear", (input, weight, bias))
            with SelfFirst():  # (AddmmBackward0 packs mat1, then mat2)
                return linear_reference(input, weight, bias)
        return fused_or_reference("linear", linear_reference, (input, weight, bias))
    if input.dtype is not weight.dtype:  # PyTorch's class; named here, not as matmul's
        raise RuntimeError(
            f"linear: input and weight must have one dtype, got {input.dtype.name} and "
            f"{weight.dtype.name}; convert one with .to(...)"
        )
    if bias is not None and bias.dim() <= 1 and bias.dtype is input.dtype:
        fused = False  # either way of adding it gives ``out + bias`` (or the same error)
    else:
        fused = bias is not None and _fused_by_torch(input, bias)
    if fused and bias.dtype is not input.dtype:
        raise RuntimeError(
            f"linear: bias must have the same dtype as input and weight, got "
            f"{bias.dtype.name} and {input.dtype.name}; convert it with .to(...)"
        )
    out = input @ (weight.t() if weight.dim() == 2 else weight)
    if bias is None:
        return out
    if weight.dim() != 2:
        return out + bias
    if fused:
        return _add_as_addmm(out, bias)
    return _add_in_place(out, bias)


def _fused_by_torch(input: Tensor, bias: Tensor) -> bool:
    """Whether PyTorch's linear adds ``bias`` inside one matrix product (addmm, which refuses
    a bias of another dtype and broadcasts it to the ``(rows, out_features)`` product)
    rather than after it (an in-place add, which keeps the product's dtype and shape):
    always for a 2-D input; for a contiguous input of another rank when the bias is
    contiguous and one-dimensional in effect (1-D, or one size other than 1), as measured
    on PyTorch 2.13."""
    if input.dim() == 2:
        return True
    if bias.dim() != 1 and sum(size != 1 for size in bias.shape) != 1:
        return False
    return input.is_contiguous() and bias.is_contiguous()


def _add_as_addmm(out: Tensor, bias: Tensor) -> Tensor:
    """``out + bias`` as addmm computes it on the product flattened to ``(rows, cols)``:
    the bias must expand to that 2-D shape (PyTorch's RuntimeError otherwise)."""
    cols = out.shape[-1]
    rows = out.numel() // cols if cols else math.prod(out.shape[:-1])
    target = (rows, cols)
    sizes = tuple(bias.shape)
    if len(sizes) > 2 or any(
        s != 1 and s != t for s, t in zip(sizes[::-1], target[::-1], strict=False)
    ):
        raise RuntimeError(
            f"linear: the bias of shape {sizes} cannot be expanded to the product's flattened "
            f"shape {target} (addmm's expand)"
        )
    if out.dim() == 2:
        return out + bias
    if bias.dim() == 2 and sizes[0] != 1:  # one bias row per flattened input row
        return (out.reshape(target) + bias).reshape(out.shape)
    return out + bias.reshape(cols) if bias.numel() == cols else out + bias.reshape(())


def _add_in_place(out: Tensor, bias: Tensor) -> Tensor:
    """``out.add_(bias)`` as PyTorch's unfused linear does: the product keeps its shape
    and dtype (the bias is converted; one that cannot be cast is refused)."""
    result = out + bias
    if result.shape != out.shape:
        raise RuntimeError(
            f"linear: output with shape {list(out.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)} (PyTorch adds the bias in place)"
        )
    if result.dtype is not out.dtype:
        if not tw.can_cast(result.dtype, out.dtype):
            raise RuntimeError(
                f"linear: result type {result.dtype.name} can't be cast to the desired "
                f"output type {out.dtype.name}"
            )
        result = result.to(out.dtype)
    return result


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., k] = input1 @ weight[k] @ input2 + bias[k], for ``(out, in1, in2)`` weight."""
    if weight.dim() != 3:  # PyTorch's class: it reads a third weight dimension
        raise IndexError(
            f"bilinear: expected a 3-D weight (out_features, in1_features, in2_features), got "
            f"shape {tuple(weight.shape)}"
        )
    out_features, in1, in2 = weight.shape
    lead = tuple(input1.shape[:-1])
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input2.shape[:-1]) != lead:
        raise RuntimeError(
            f"bilinear: inputs {tuple(input1.shape)} and {tuple(input2.shape)} do not fit "
            f"weight {tuple(weight.shape)}: expected (..., {in1}) and (..., {in2}) with the "
            "same leading shape"
        )
    # The bias is added after _trilinear: a bias alone requiring grad is differentiable.
    operands = (input1, input2, weight)
    if (
        any(t.dtype.kind == "c" for t in operands)
        and tw.is_grad_enabled()
        and any(t.requires_grad for t in operands)
    ):  # PyTorch's _trilinear kernel has no complex gradient: it refuses in the forward
        raise RuntimeError(
            "bilinear: _trilinear does not support automatic differentiation for outputs with "
            "complex dtype; run it under tw.no_grad() or on real tensors"
        )
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, 1, in2)
    # (B, in1) @ (in1, out * in2): every input1 row against every output's matrix at once.
    mixed = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(
        -1, out_features, in2
    )
    products = mixed * x2
    out = products.sum(-1).reshape(*lead, out_features)
    if out.dtype is not products.dtype:  # an integer sum widens; PyTorch's bilinear does not
        out = out.to(products.dtype)
    return out if bias is None else out + bias
