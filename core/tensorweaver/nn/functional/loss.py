"""Regression, likelihood and class losses (``reduction`` is ``'mean'``, ``'sum'`` or ``'none'``).

The deprecated ``size_average``/``reduce`` arguments are honoured as PyTorch does. Class
losses take ``(N, C, d1, ...)`` (or ``(C,)``) inputs with class-index targets of shape
``(N, d1, ...)``; ``cross_entropy`` also takes class-probability targets shaped like the
input.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.function import apply_fresh
from tensorweaver.autograd.graph import pack_operands
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, Node, refuse_saved, saved_operand
from tensorweaver.contract.cpu_loops import HALF_STEP
from tensorweaver.nn.functional.activation import log_softmax, logsigmoid
from tensorweaver.nn.functional.integral import is_integral
from tensorweaver.ops import index as ix
from tensorweaver.ops.apply import all_inference, check_backends, labelled
from tensorweaver.ops.bounds import checked_by_kernel, extrema, inside
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.fusion import optional_kernel
from tensorweaver.tensor import Tensor


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """``reduction``, or the legacy pair translated as PyTorch does."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is None or reduce:
        reduction = "mean" if size_average is None or size_average else "sum"
    else:
        reduction = "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead.",
        stacklevel=3,
    )
    return reduction


def _reduce(loss: Tensor, reduction: str, fn: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _refuse_differentiable(t: Tensor | None, kernel: str, argument: str) -> None:
    """PyTorch's error where a loss's kernel takes ``t`` (a class weight, ``pos_weight``)
    that requires grad while grad mode is on: its kernel has no gradient for it."""
    if t is not None and t.requires_grad and tw.is_grad_enabled():
        raise RuntimeError(
            f"The function '{kernel}' is not differentiable with respect to argument "
            f"'{argument}'. This input cannot have requires_grad True."
        )


def _check_sizes(input: Tensor, target: Tensor, weight: Tensor | None, fn: str) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"{fn}: using a target size ({tuple(target.shape)}) that is different to the input "
            f"size ({tuple(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError(
            f"{fn}: weight of shape {tuple(weight.shape)} must have the input's shape "
            f"{tuple(input.shape)}"
        )


def _weighted(
    loss: Tensor, weight: Tensor | None, reduction: str, by_weight: bool, fn: str
) -> Tensor:
    """Reduce ``loss * weight``; the mean divides by the weights' sum when ``by_weight``."""
    if weight is None:
        return _reduce(loss, reduction, fn)
    loss = loss * weight
    if reduction == "mean" and by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction, fn)


#: The dtypes whose loss gradients :class:`_HalfLoss` computes as PyTorch's kernels do.
_HALF = (tw.float16, tw.bfloat16)


def _half_pair(input: Tensor, target: Tensor, reduction: str) -> bool:
    """Whether ``input`` and ``target`` are float16 or bfloat16 tensors of one dtype and shape
    under a valid reduction: the case :class:`_HalfLoss` computes PyTorch's way."""
    return (
        input.dtype in _HALF
        and target.dtype is input.dtype
        and tuple(target.shape) == tuple(input.shape)
        and reduction in ("mean", "sum", "none")
    )


class _HalfLoss(tw.autograd.Function):
    """A reduced float16/bfloat16 loss with PyTorch's CPU gradients. Its kernels compute the
    gradients by their own formulas in the half type, rounding after each operation, and
    divide by the count for the mean last (mse folds it into its factor): differentiating the
    elementwise loss and its mean instead rounds in other places. ``grads(input, target,
    grad, reduction)`` gives both gradients."""

    @staticmethod
    def forward(
        ctx: Any,
        input: Tensor,
        target: Tensor,
        reduction: str,
        loss: Callable,
        grads: Callable,
        fn: str,
    ) -> Tensor:  # noqa: E501
        ctx.save_for_backward(input, target)
        ctx.reduction, ctx.grads = reduction, grads
        return _reduce(loss(input, target), reduction, fn)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        input, target = ctx.saved_tensors
        return (*ctx.grads(input, target, grad, ctx.reduction), None, None, None, None)


def _per_element(grad: Tensor, count: int, reduction: str) -> Tensor:
    """A gradient of the summed loss made the mean's, as PyTorch's kernels do: divided last."""
    return grad / count if reduction == "mean" else grad


def _mse_grads(input: Tensor, target: Tensor, grad: Tensor, reduction: str) -> tuple:
    # PyTorch's factor 2 (2 / count for the mean) is rounded to the half type first
    norm = 2 / input.numel() if reduction == "mean" else 2.0
    g = tw.tensor(norm, dtype=input.dtype, device=input.device) * (input - target) * grad
    return g, -g


def _bce_grads(input: Tensor, target: Tensor, grad: Tensor, reduction: str) -> tuple:
    n = input.numel()
    g_input = grad * (input - target) / ((1 - input) * input).clamp(min=_BCE_EPSILON)
    g_target = -input.logit() * grad
    return _per_element(g_input, n, reduction), _per_element(g_target, n, reduction)


def _bce_logits_grads(input: Tensor, target: Tensor, grad: Tensor, reduction: str) -> tuple:
    n = input.numel()
    g_input = (input.sigmoid() - target) * grad
    return _per_element(g_input, n, reduction), _per_element(-input * grad, n, reduction)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """(x - y) ** 2, optionally weighted (the mean then divides by the weights' sum)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    _check_sizes(input, target, weight, "mse_loss")
    if is_integral(input.dtype) and is_integral(target.dtype):  # PyTorch has no integer kernel
        raise NotImplementedError(
            f"mse_loss: not implemented for {input.dtype} and {target.dtype} inputs; convert "
            f"one to floating point first (input.float())"
        )
    input, target = _bools_as_numbers(input, target)
    saved = (input, target)  # (before the alias below, which nothing else keeps)
    if target is input and input.requires_grad:
        # (PyTorch's node has an edge for each operand, whose gradients its hooks see apart:
        # a distinct alias keeps them apart here too)
        target = target.view_as(target)
    reduction = _reduction(size_average, reduce, reduction)
    if input.dtype in _HALF and weight is None and _half_pair(input, target, reduction):
        out = _HalfLoss.apply(input, target, reduction, _squared_error, _mse_grads, "mse_loss")
    else:
        out = _weighted(_squared_error(input, target), weight, reduction, True, "mse_loss")
    if weight is not None:  # PyTorch's weighted form is a composite that prints its last op's name
        return out
    return _saving(out, "MseLossBackward0", input, target, saved)


def _saving(out: Tensor, grad_fn: str, input: Tensor, target: Tensor, saved: tuple) -> Tensor:
    """``out`` labelled ``grad_fn``, PyTorch's node of ``input`` and ``target``, which saves
    the tensors ``saved``: its backward refuses them once changed in place, as PyTorch's."""
    return _saved_operands(labelled(out, grad_fn, input, target), grad_fn, saved)


def _saved_operands(out: Tensor, grad_fn: str, saved: tuple) -> Tensor:
    """``out``, whose node (labelled ``grad_fn``) saves the tensors ``saved`` (None: one not
    given) as PyTorch's node of that name does: an inference tensor among them is refused,
    and backward refuses once one of them, or the memory it views, changed in place."""
    node = out._node
    if node is None or node.label != grad_fn:
        return out
    operands = []
    for t in saved:  # (a plain loop: this runs on every loss call)
        if t is None:
            continue
        if t._inference:
            refuse_saved(grad_fn, t)
        # a view or alias held: its base's later change reaches it (PyTorch's counter is
        # shared over the memory), even where made for the call alone; else weakly, so the
        # graph keeps no more than before
        operands.append(saved_operand(t, t._view_of is not None or t._alias_of is not None))
    node.operands = tuple(operands)
    if SAVED_TENSORS_HOOKS:  # (PyTorch's node packs what it saves: the class targets here)
        if node.op == "function":  # (its ctx packed them, as _NllLoss: no version checks)
            node.operands = ()
        else:
            pack_operands(node, saved)
    return out


def _bools_as_numbers(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """A bool operand in the other's floating type: PyTorch's fused kernels take a bool
    target (or input) where a subtraction of a bool tensor is refused."""
    if target.dtype is tw.bool and input.dtype.is_floating_point:
        target = target.to(input.dtype)
    elif input.dtype is tw.bool and target.dtype.is_floating_point:
        input = input.to(target.dtype)
    return input, target


def _squared_error(input: Tensor, target: Tensor) -> Tensor:
    diff = input - target
    return diff * diff


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """|x - y|, optionally weighted (the mean then divides by the weights' sum)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    _check_sizes(input, target, weight, "l1_loss")
    return _weighted(
        (input - target).abs(), weight, _reduction(size_average, reduce, reduction), True, "l1_loss"
    )


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 * d ** 2 / beta where d = |x - y| < beta, else d - 0.5 * beta."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target = float32_operands(input, target)
    _check_sizes(input, target, None, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    input, target = _bools_as_numbers(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if input.dtype is tw.float16 and beta > 0 and _half_pair(input, target, reduction):
        # PyTorch's float16 kernel computes in float16 with beta rounded to it; its gradient
        # in float32, rounded once
        loss = functools.partial(_smooth_l1, beta=_half_number(beta))
        grads = functools.partial(_smooth_l1_half_grads, beta=beta)
        out = _HalfLoss.apply(input, target, reduction, loss, grads, "smooth_l1_loss")
        return _saving(out, "SmoothL1LossBackward0", input, target, (input, target))
    if beta == 0:  # PyTorch's l1_loss
        return _reduce((input - target).abs(), reduction, "smooth_l1_loss")
    out = _reduce(_smooth_l1(input, target, beta), reduction, "smooth_l1_loss")
    return _saving(out, "SmoothL1LossBackward0", input, target, (input, target))


def _smooth_l1(input: Tensor, target: Tensor, beta: float) -> Tensor:
    # (the square of the signed difference: its second derivative is 1 / beta at 0 too)
    diff = input - target
    d = diff.abs()
    return tw.where(d < beta, 0.5 * diff * diff / beta, d - 0.5 * beta)


def _half_number(value: float) -> float:
    """``value`` rounded to float16 as PyTorch converts a double: through float32."""
    return float(np.float16(np.float32(value)))


def _norm(input: Tensor, reduction: str) -> float:
    """The factor PyTorch's loss kernels apply to the gradient: 1 / count for the mean."""
    return 1 / input.numel() if reduction == "mean" else 1.0


def _smooth_l1_half_grads(
    input: Tensor, target: Tensor, grad: Tensor, reduction: str, beta: float
) -> tuple:
    """PyTorch's float16 smooth_l1 gradient, in float32 rounded once: norm * (x / beta, or
    its sign where |x| >= beta) * grad (its vector loop's order, which its scalar loop's
    agrees with on every case tried)."""
    x = input.float() - target.float()
    slope = tw.where(x.abs() >= beta, x.sign(), x / beta)
    g_input = (_norm(input, reduction) * slope * grad.float()).to(input.dtype)
    return g_input, -g_input


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """0.5 * d ** 2 where d = |x - y| < delta, else delta * (d - 0.5 * delta); optionally
    weighted (the mean stays over elements)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    _check_sizes(input, target, weight, "huber_loss")
    if delta <= 0:
        raise RuntimeError(f"huber_loss: delta must be positive, got {delta}")
    if input.dtype.is_floating_point and target.dtype.is_floating_point:
        target = target.to(input.dtype)  # PyTorch's huber_loss keeps the input's dtype
    if input.dtype is tw.float16 and weight is None and _half_pair(input, target, reduction):
        loss = functools.partial(_huber_half, delta=delta)
        grads = functools.partial(_huber_half_grads, delta=delta)
        out = _HalfLoss.apply(input, target, reduction, loss, grads, "huber_loss")
        return _saving(out, "HuberLossBackward0", input, target, (input, target))
    out = _weighted(_huber(input, target, delta), weight, reduction, False, "huber_loss")
    # PyTorch's kernel without a weight; with one, the weighting's own ops
    if weight is not None:
        return out
    return _saving(out, "HuberLossBackward0", input, target, (input, target))


def _huber(input: Tensor, target: Tensor, delta: float) -> Tensor:
    diff = input - target  # (squared signed, as _smooth_l1's)
    d = diff.abs()
    return tw.where(d < delta, 0.5 * diff * diff, delta * (d - 0.5 * delta))


def _huber_half(input: Tensor, target: Tensor, delta: float) -> Tensor:
    """PyTorch's float16 huber kernel: in float32 from the float16 inputs, rounded once."""
    return _huber(input.float(), target.float(), delta).to(input.dtype)


def _huber_half_grads(
    input: Tensor, target: Tensor, grad: Tensor, reduction: str, delta: float
) -> tuple:
    """PyTorch's float16 huber gradient: each operation rounded to float16. Its vector loop
    computes norm * clamp(x, -delta, delta) * grad with delta rounded to float16; its scalar
    loop (the last elements) norm * grad * delta with the double delta where |x| >= delta
    (rounded through float32), else norm * x * grad."""
    norm = tw.tensor(_norm(input, reduction), dtype=input.dtype, device=input.device)
    x = input - target
    rounded = _half_number(delta)
    g_input = norm * x.clamp(-rounded, rounded) * grad
    n = input.numel()
    start = n - n % HALF_STEP  # (the elements PyTorch's scalar loop takes)
    if start < n:
        x, g = x.reshape(-1)[start:], grad.expand(input.shape).reshape(-1)[start:]
        wide = tw.float64 if tw.float64 in input.backend.dtypes else tw.float32
        outer = ((norm * g).to(wide) * delta).float().to(input.dtype)
        wide_x = x.float()
        tail = tw.where(wide_x <= -delta, -outer, tw.where(wide_x >= delta, outer, norm * x * g))
        g_input = tw.cat([g_input.reshape(-1)[:start], tail]).reshape(input.shape)
    return g_input, -g_input


# -- class losses ----------------------------------------------------------------------------


def _check_class_targets(input: Tensor, target: Tensor, ignore_index: int, fn: str) -> bool:
    """``(N, C, d1, ...)`` input against ``(N, d1, ...)`` integer targets in ``[0, C)`` or
    equal to ``ignore_index``; True when every target lies in ``[0, C)``."""
    _check_target_form(input, target, fn)
    return _check_target_range(input, target, ignore_index, fn)


def _check_target_range(input: Tensor, target: Tensor, ignore_index: int, fn: str) -> bool:
    """Integer targets of ``(N, C, ...)`` input in ``[0, C)`` or equal to ``ignore_index``
    (one read back to the host, two where some target is not a class); True when every
    target lies in ``[0, C)``."""
    classes = input.shape[1]
    bounds = extrema(target, _fast_path_outcome(classes))
    if bounds is None or 0 <= bounds[0] and bounds[1] < classes:
        return True  # the common case: one read-back
    low, high = extrema(target.masked_fill(target == ignore_index, 0), inside(0, classes - 1))
    if low < 0 or high >= classes:
        raise IndexError(  # PyTorch's class
            f"{fn}: target {low if low < 0 else high} is out of bounds: targets must lie in "
            f"[0, {classes}) or equal ignore_index={ignore_index}"
        )
    return False


def _check_target_form(input: Tensor, target: Tensor, fn: str) -> None:
    """``(N, C, d1, ...)`` input against ``(N, d1, ...)`` int64 or uint8 targets."""
    expected = (input.shape[0], *input.shape[2:])
    if target.dtype.is_floating_point or tuple(target.shape) != expected:
        raise RuntimeError(  # (_batched_classes tested the batch size)
            f"{fn}: expected integer class targets of shape {expected} for the input of shape "
            f"{tuple(input.shape)}, got {target.dtype.name} targets of shape "
            f"{tuple(target.shape)}"
        )
    if target.dtype not in (tw.int64, tw.uint8):
        raise RuntimeError(
            f"{fn}: expected target dtype to be Long or Byte (int64 or uint8), but got "
            f"{target.dtype.name}; convert the targets with .long()"
        )


def _fast_path_outcome(classes: int) -> Callable[[Any, Any], Any]:
    """``extrema``'s region for the first target check: every target a class, or (an ignored
    target such as -100 among them) some target below 0, or some at ``classes`` or above. A
    compiled step replays in each case while the next batch's targets decide alike."""
    fast = inside(0, classes - 1)

    def region(least: Any, greatest: Any) -> Any:
        if least < 0:
            return (-math.inf, -1), (-math.inf, math.inf)
        if greatest >= classes:
            return (-math.inf, math.inf), (classes, math.inf)
        return fast(least, greatest)

    return region


def _class_weights(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    fn: str,
    checked: bool = False,
) -> tuple[Tensor, Tensor]:
    """Each target's weight (0 where ignored) and the targets with ignored ones set to 0,
    after checking ``(N, C, d1, ...)`` input against ``(N, d1, ...)`` integer targets
    (unless ``checked``)."""
    if not checked:  # (PyTorch's order: the targets' form, the weight, their range)
        _check_target_form(input, target, fn)
    if weight is not None:
        _check_class_weight(input, weight, fn)
    if not checked:
        _check_target_range(input, target, ignore_index, fn)
    target = target.long()
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0)
    if weight is None:
        return valid.to(input.dtype), safe
    picked = ix.take_along(weight, 0, safe.reshape(-1)).reshape(safe.shape)
    return picked.masked_fill(~valid, 0), safe


def _check_class_weight(input: Tensor, weight: Tensor, fn: str) -> None:
    """One weight per class of ``input`` ``(N, C, ...)``, of the input's dtype."""
    classes = input.shape[1]
    if tuple(weight.shape) != (classes,):
        raise RuntimeError(
            f"{fn}: weight of shape {tuple(weight.shape)} must hold one value per class ({classes})"
        )
    if weight.dtype is not input.dtype:  # PyTorch's kernel refuses
        raise RuntimeError(
            f"{fn}: expected scalar type {input.dtype.name} but found {weight.dtype.name}: the "
            "weight must have the input's dtype (convert it with .to(input.dtype))"
        )


def _batched_classes(
    input: Tensor, target: Tensor, fn: str, probabilities: bool = False
) -> tuple[Tensor, Tensor, bool]:
    """A ``(C,)`` input gets a batch axis of one, and so does its target: a class index (0-d,
    or of shape ``(1,)`` as PyTorch takes it) or, when ``probabilities``, a target shaped like
    the input; the flag says so. A target of another batch size is a ValueError, as
    PyTorch's."""
    shape, target_shape = input.shape, target.shape
    same = probabilities and target_shape == shape
    if same and not target.dtype.is_floating_point:
        raise RuntimeError(  # (PyTorch's test of the probabilities, before any other)
            f"{fn}: expected integer class targets of shape "
            f"{(*shape[:1], *shape[2:]) if len(shape) > 1 else ()} or floating-point class "
            f"probabilities of the input's shape, got "
            f"{target.dtype.name} targets of shape {tuple(target_shape)}"
        )
    if len(shape) > 1:
        if not same and (not target_shape or target_shape[0] != shape[0]):
            raise ValueError(
                f"{fn}: expected integer class targets of shape {(shape[0], *shape[2:])} for "
                f"the input of shape {tuple(shape)}, got a target of shape "
                f"{tuple(target_shape)}: its batch size must be the input's"
            )
        return input, target, False
    if not shape:  # (cross_entropy's log_softmax over dimension 1 fails first)
        raise (IndexError if probabilities else ValueError)(
            f"{fn}: expected an input of 1 or more dimensions (got 0), e.g. (C,)"
        )
    if len(target_shape) > 1 or same:
        return input.unsqueeze(0), target.unsqueeze(0), True
    if target_shape and target_shape[0] != 1 and not target.dtype.is_floating_point:
        raise ValueError(  # (PyTorch tests the dtype first)
            f"{fn}: a (C,) input takes one class index (a 0-d target or one of shape (1,)), "
            f"got a target of shape {tuple(target_shape)}"
        )
    return input.unsqueeze(0), target if target_shape else target.reshape(1), True


def _nll(
    logp: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    fn: str,
    checked: bool = False,
) -> tuple[Tensor, Tensor]:
    """The (reduced) negative log-likelihood of batched inputs and the per-target weights
    (``checked``: the targets were checked already)."""
    check_backends(fn, (logp, target) if weight is None else (logp, target, weight))
    w, safe = _class_weights(logp, target, weight, ignore_index, fn, checked)
    picked = ix.gather_unchecked(logp, 1, safe.unsqueeze(1)).squeeze(1)
    # masked_fill first: a -inf log-probability at an ignored target must not become NaN.
    loss = -picked.masked_fill(w == 0, 0) * w
    if reduction == "mean":
        return loss.sum() / w.sum(), w
    return _reduce(loss, reduction, fn), w


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-weight[t] * input[t] for class-index targets t, skipping ``ignore_index``; the mean
    divides by the summed weights of the targets kept."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    reduction = _reduction(size_average, reduce, reduction)
    x, t, unbatched = _batched_classes(input, target, "nll_loss")
    _refuse_differentiable(weight, "nll_loss_forward", "weight")
    check_backends("nll_loss", (x, t) if weight is None else (x, t, weight))
    name = _nll_name(x.dim(), reduction)
    if _by_kernel(x, weight, reduction):
        loss = _kernel_nll(x, t, weight, ignore_index, reduction, "nll_loss")
        if unbatched and reduction == "none":
            loss = labelled(loss.squeeze(0), name, x)
    else:
        loss = _composed_nll(x, t, weight, ignore_index, reduction, unbatched, name)
    # (PyTorch's node saves the operands as given: a (C,) input's too)
    return _saved_operands(loss, name, (input, target, weight))


def _composed_nll(
    x: Tensor,
    t: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    unbatched: bool,
    name: str,
) -> Tensor:
    """``nll_loss`` of batched ``x`` as a composition of core ops, labelled ``name``."""
    checked = False
    if weight is None and not 0 <= ignore_index < x.shape[1] and reduction in _REDUCTIONS:
        checked = True
        if _check_class_targets(x, t, ignore_index, "nll_loss") and _counts_exactly(x, t):
            return labelled(_unweighted_nll(x, t, reduction, unbatched), name, x)
    loss = _nll(x, t, weight, ignore_index, reduction, "nll_loss", checked)[0]
    loss = loss.squeeze(0) if unbatched and reduction == "none" else loss
    return labelled(loss, name, x)


_REDUCTIONS = ("mean", "sum", "none")


def _nll_name(ndim: int, reduction: str) -> str:
    """PyTorch's grad_fn for ``nll_loss`` of a batched ``ndim``-d input: its 2-d kernel
    for images, other shapes viewed as images and their unreduced loss viewed back."""
    if ndim == 2:
        return "NllLossBackward0"
    return "ViewBackward0" if ndim != 4 and reduction == "none" else "NllLoss2DBackward0"


def _by_kernel(x: Tensor, weight: Tensor | None, reduction: str) -> bool:
    """Whether ``x``'s backend computes ``nll_loss`` of ``x`` (batched, real floating-point)
    with its own kernels (the optional ``nll_loss`` and ``nll_loss_backward`` primitives),
    unless ``reference_only`` asks for the core's decomposition. A weight that requires grad
    takes the composition, which differentiates it."""
    return (
        x.dim() == 2
        and x.dtype.kind == "f"
        and reduction in _REDUCTIONS
        and (weight is None or not weight.requires_grad)
        and optional_kernel(x.backend, "nll_loss") is not None
    )


def _kernel_nll(
    x: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str, fn: str
) -> Tensor:
    """``nll_loss`` of ``(N, C)`` ``x`` by the backend's kernel, after the checks: the
    targets' range by the kernel itself where it raises IndexError for a bad one
    (``checked_indices``: no read back; the error in the core's words), else read first."""
    _check_target_form(x, target, fn)  # (PyTorch's order: the form, the weight, the range)
    if weight is not None:
        _check_class_weight(x, weight, fn)
    return _range_checked(
        checked_by_kernel(x.backend, "nll_loss"),
        x,
        target,
        ignore_index,
        fn,
        lambda: _nll_by_kernel(x, target.long(), weight, reduction, ignore_index),
    )


def _range_checked(
    by_kernel: bool,
    x: Tensor,
    target: Tensor,
    ignore_index: int,
    fn: str,
    run: Callable[[], Tensor],
) -> Tensor:
    """``run()`` with the targets' range checked: by the kernel itself where ``by_kernel``
    (``checked_indices``: it raises IndexError for a bad one, no read back; the error is
    then given in the core's words), else read first."""
    if not by_kernel:
        _check_target_range(x, target, ignore_index, fn)
    try:
        return run()
    except IndexError:
        if by_kernel:
            _check_target_range(x, target, ignore_index, fn)  # (raises, in the core's words)
        raise


def _nll_by_kernel(
    x: Tensor, target: Tensor, weight: Tensor | None, reduction: str, ignore_index: int
) -> Tensor:
    """:func:`_kernel_nll` of checked int64 targets, with its node where ``x`` needs one."""
    if SAVED_TENSORS_HOOKS:  # (the Function's ctx packs what PyTorch's node saves)
        loss = apply_fresh(_NllLoss, x, (target, weight), reduction, ignore_index)
        return labelled(loss, "NllLossBackward0", x)
    backend = x.backend
    w = None if weight is None else weight.native
    loss, total = backend.nll_loss(x.native, target.native, w, reduction, ignore_index)
    out = Tensor(loss, backend, x.dtype)
    if not x.requires_grad or not tw.is_grad_enabled() or x._inference and all_inference((x,)):
        return out  # (PyTorch's autograd skips an op of inference tensors alone)
    # A node of the rule table (autograd/gradients.py, "nll_loss": nll_loss_gradient), not
    # a Function's: forward 15 -> 5 us, its backward step 70 -> 25 us.
    node = out._node = Node("nll_loss", (x,), (target, weight, total, reduction, ignore_index))
    node.label = "NllLossBackward0"  # (what _saved_operands looks for)
    out._requires_grad = True
    return out


def nll_loss_gradient(node: Any, g: Tensor) -> tuple:
    """The rule of the node of ``nll_loss`` by the backend's kernels (:func:`_kernel_nll`):
    ``nll_loss_backward``; under ``create_graph`` the composition differentiated instead
    (its gradient is constant in the input: the graph reaches the incoming gradient)."""
    x = node.inputs[0]
    target, weight, total, reduction, ignore_index = node.saved
    if tw.is_grad_enabled():
        return (_composed_gradient(x, target, weight, reduction, ignore_index, g),)
    backend = x.backend
    w = None if weight is None else weight.native
    native = backend.nll_loss_backward(
        g.native, x.native, target.native, w, reduction, ignore_index, total
    )
    return (Tensor(native, backend, x.dtype),)


def _composed_gradient(
    x: Tensor, target: Tensor, weight: Tensor | None, reduction: str, ignore_index: int, g: Tensor
) -> Tensor:
    """The gradient of ``nll_loss`` as a graph of core ops (create_graph)."""
    with tw.enable_grad():
        stand = x.detach().requires_grad_()
        loss = _nll(stand, target, weight, ignore_index, reduction, "nll_loss", True)[0]
    return tw.autograd.grad(loss, stand, g, create_graph=True)[0]


class _NllLoss(tw.autograd.Function):
    """``nll_loss`` of ``(N, C)`` input and checked int64 targets as one node inside
    saved_tensors_hooks (else :func:`_kernel_nll` records a node of the rule table): the
    backend's kernel each way, where the composition costs a gather, a sum and a division
    forward and a scatter into zeros backward (torch:cpu, (80, 10000) float32: 248 against
    85 us). Under ``create_graph`` the backward differentiates the composition instead. The
    targets and weights come as one ``(target, weight)`` pair: no gradient, and not inputs
    of the node. The ctx saves what PyTorch's NllLossBackward0 saves, in its order (self,
    target, weight if any, total_weight: what the hooks see, backward reading what unpack
    gives)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, labels: tuple, reduction: str, ignore_index: int) -> Tensor:
        target, weight = labels
        backend = x.backend
        w = None if weight is None else weight.native
        loss, total = backend.nll_loss(x.native, target.native, w, reduction, ignore_index)
        ctx.save_for_backward(x, target, weight, Tensor(total, backend, x.dtype))
        ctx.call = (reduction, ignore_index)
        return Tensor(loss, backend, x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, target, weight, total = ctx.saved_tensors
        reduction, ignore_index = ctx.call
        if tw.is_grad_enabled():  # create_graph: the gradient as a graph of core ops
            g = _composed_gradient(x, target, weight, reduction, ignore_index, grad)
            return g, None, None, None
        backend = x.backend
        w = None if weight is None else weight.native
        native = backend.nll_loss_backward(
            grad.native, x.native, target.native, w, reduction, ignore_index, total.native
        )
        return Tensor(native, backend, x.dtype), None, None, None


def _counts_exactly(x: Tensor, target: Tensor) -> bool:
    """Whether the number of targets is exact in ``x``'s dtype (float32 and float64 up to
    2**24), as the general path's sum of unit weights is."""
    return x.dtype in (tw.float32, tw.float64) and target.numel() <= 1 << 24


def _unweighted_nll(x: Tensor, target: Tensor, reduction: str, unbatched: bool) -> Tensor:
    """``nll_loss`` without class weights when no target is ignored: every weight is 1, so
    the general path's mask and product change nothing (the same values and gradients, bit
    for bit) and its weight sum is the number of targets."""
    loss = -ix.gather_unchecked(x, 1, target.long().unsqueeze(1)).squeeze(1)
    if reduction == "mean":
        return loss.sum() / target.numel()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)`` for class indices, or
    ``-sum(target * log_softmax(input, 1))`` for class probabilities shaped like the input;
    ``label_smoothing`` mixes the targets with the uniform distribution."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"cross_entropy: label_smoothing must lie in [0, 1], got {label_smoothing}"
        )
    x, t, unbatched = _batched_classes(input, target, "cross_entropy", True)
    if label_smoothing and unbatched and target.dim() == 1 and not t.dtype.is_floating_point:
        raise RuntimeError(  # PyTorch's smoothing term of a (C,) input takes no (1,) target
            "cross_entropy: label_smoothing with a (C,) input takes a 0-d class index, got a "
            f"target of shape {tuple(target.shape)}; pass target.reshape(())"
        )
    composite = "cross_entropy" if x.dim() == 2 else "cross_entropy_nd"
    if (
        weight is None
        and not label_smoothing
        and reduction == "mean"
        and x.dtype.is_floating_point
        and not t.dtype.is_floating_point
        # (under saved_tensors_hooks, PyTorch's two nodes below pack what they save)
        and not SAVED_TENSORS_HOOKS
    ):
        # (the targets' range by torch:cpu's kernel itself, as in _kernel_nll)
        by_kernel = t.backend is x.backend and checked_by_kernel(x.backend, composite)
        _check_target_form(x, t, "cross_entropy")
        loss = _range_checked(
            by_kernel,
            x,
            t,
            ignore_index,
            "cross_entropy",
            lambda: fused_or_reference(
                composite, cross_entropy_reference, (x, t.long()), ignore_index
            ),
        )
        if unbatched and loss._node is not None and loss._node.op == "fused":
            # PyTorch's nll takes the (C,) log-probabilities as they are: the fused node's
            # edges skip the batch axis given here (autograd/grad_fn.py pytorch_inputs)
            return labelled(loss, "NllLossBackward0", input, target)
        return loss
    classes = x.shape[1]
    if t.dtype.is_floating_point:
        if tuple(t.shape) != tuple(x.shape):  # (_batched_classes tested the batch size)
            raise RuntimeError(
                f"cross_entropy: class-probability targets must have the input's shape "
                f"{tuple(input.shape)}, got {tuple(target.shape)}; class indices must be int64"
            )
        if ignore_index != -100:  # PyTorch's class
            raise RuntimeError(
                f"cross_entropy: ignore_index ({ignore_index}) is not supported for "
                "class-probability (floating-point) targets; leave it at -100"
            )
        # (PyTorch reduces an unbatched input as it is: its graph has no batch axis)
        x, t = (input, target) if unbatched else (x, t)
        return _probability_cross_entropy(x, t, weight, reduction, label_smoothing)
    _refuse_differentiable(weight, "nll_loss_forward", "weight")  # (class indices: nll's)
    logp = log_softmax(x, 1)
    class_view = (1, classes, *([1] * (x.dim() - 2)))
    if not label_smoothing and _by_kernel(logp, weight, reduction):
        check_backends("cross_entropy", (logp, t) if weight is None else (logp, t, weight))
        loss = _kernel_nll(logp, t, weight, ignore_index, reduction, "cross_entropy")
    else:
        loss, w = _nll(logp, t, weight, ignore_index, reduction, "cross_entropy")
        if label_smoothing:
            # PyTorch's nodes: the nll step, the masked smoothing term, each scaled by a
            # number (MulBackward1, one edge).
            loss = labelled(loss, _nll_name(x.dim(), reduction), logp)
            # Each kept target also pays the (weighted) mean log-probability of all classes.
            spread = logp if weight is None else logp * weight.reshape(class_view)
            negated = -spread.sum(1)
            smooth = labelled(
                negated.masked_fill(t == ignore_index, 0), "MaskedFillBackward0", negated
            )
            smooth = (
                smooth.sum() / w.sum()
                if reduction == "mean"
                else _reduce(smooth, reduction, "cross_entropy")
            )
            kept = labelled(loss * (1 - label_smoothing), "MulBackward1", loss)
            loss = kept + labelled(smooth * (label_smoothing / classes), "MulBackward1", smooth)
    # PyTorch's last op (it reduces an unbatched input as it is, without a squeeze)
    if label_smoothing:
        name = "AddBackward0"
    else:  # (PyTorch's node: the nll step, whose input is log_softmax's output)
        name = _nll_name(x.dim(), reduction)
        x = logp
    loss = loss.squeeze(0) if unbatched and reduction == "none" else loss
    # (the nll step's node saves the targets and weights, log_softmax's its own output)
    return _saved_operands(labelled(loss, name, x), name, (target, weight))


def _probability_cross_entropy(
    x: Tensor, t: Tensor, weight: Tensor | None, reduction: str, label_smoothing: float
) -> Tensor:
    """cross_entropy of logits ``x`` against class probabilities ``t`` of its shape (classes
    on axis 1, or 0 for one sample) as PyTorch's graph: ``-(logp * t [* weight]).sum(...)``,
    the mean divided by the number of rows."""
    dim = 1 if x.dim() > 1 else 0
    classes = x.shape[dim]
    if label_smoothing:
        t = t * (1 - label_smoothing) + label_smoothing / classes
    prod = log_softmax(x, dim) * t
    if weight is not None:
        prod = prod * (weight.reshape(1, classes, *([1] * (x.dim() - 2))) if dim else weight)
    if reduction == "none":  # (PyTorch's sum over a dimension, a (C,) input's only one too)
        return -labelled(prod.sum(dim), "SumBackward1", prod)
    if reduction == "sum":
        return -prod.sum()
    if not x.numel():  # PyTorch's mean of nothing: its sum filled with NaN
        return -prod.sum().fill_(math.nan)
    loss = -prod.sum()
    return labelled(loss / (x.numel() // classes), "DivBackward1", loss)


def cross_entropy_reference(x: Tensor, target: Tensor, ignore_index: int) -> Tensor:
    """The decomposition of the ``cross_entropy`` and ``cross_entropy_nd`` composites (logits
    (N, C, ...), class indices, mean over the targets that are not ``ignore_index``)."""
    logp = log_softmax(x, 1)
    loss = _nll(logp, target, None, ignore_index, "mean", "cross_entropy")[0]
    # PyTorch's node: the nll step of log_softmax's output (ops/composite.py OWN_NODES)
    return labelled(loss, _nll_name(x.dim(), "mean"), logp)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-(y * log(x) + (1 - y) * log(1 - x)) for probabilities x and targets y in [0, 1]
    (PyTorch refuses others, NaN included), each log clamped at -100 as in PyTorch;
    ``weight`` broadcasts against the loss."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight = float32_operands(input, target, weight)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"binary_cross_entropy: target of shape {tuple(target.shape)} must have the input's "
            f"shape {tuple(input.shape)}"
        )
    if target.dtype is not input.dtype:
        raise RuntimeError(
            f"binary_cross_entropy: target of dtype {target.dtype.name} must have the input's "
            f"dtype {input.dtype.name}; convert it with .to(input.dtype)"
        )
    _refuse_differentiable(weight, "binary_cross_entropy", "weight")
    for name, values in (("input", input), ("target", target)):
        bounds = extrema(values, inside(0, 1))
        if bounds is not None and not (0 <= bounds[0] and bounds[1] <= 1):
            raise RuntimeError(
                f"binary_cross_entropy: all elements of {name} should be between 0 and 1, got "
                f"values from {bounds[0]} to {bounds[1]}"
            )
    reduction = _reduction(size_average, reduce, reduction)
    if input.dtype in _HALF and weight is None and _half_pair(input, target, reduction):
        loss = _BinaryCrossEntropy.apply
        out = _HalfLoss.apply(input, target, reduction, loss, _bce_grads, "binary_cross_entropy")
    else:
        loss = _BinaryCrossEntropy.apply(input, target)
        if weight is not None:
            loss = loss * weight
        out = _reduce(loss, reduction, "binary_cross_entropy")
    saved = (input, target, weight)  # (PyTorch's node's: an inference target is refused)
    return _saving(out, "BinaryCrossEntropyBackward0", input, target, saved)


#: PyTorch's 1e-12 in the binary cross entropy gradient, which it stores as a float32.
_BCE_EPSILON = 9.999999960041972e-13


class _BinaryCrossEntropy(tw.autograd.Function):
    """The elementwise binary cross entropy with PyTorch's gradients: for the input
    ``(x - y) / max(x * (1 - x), 1e-12)``, finite where a probability is exactly 0 or 1
    (differentiating the clamped logs gives 0 * inf = NaN there); for the target
    ``log(1 - x) - log(x)``."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, target: Tensor) -> Tensor:
        ctx.save_for_backward(input, target)
        # PyTorch's kernel's expression, in its order (each operation rounds in half types)
        log_p, log_q = input.log().clamp(min=-100), (-input).log1p().clamp(min=-100)
        return (target - 1) * log_q - target * log_p

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        input, target = ctx.saved_tensors
        grad_input = grad * (input - target) / (input * (1 - input)).clamp(min=_BCE_EPSILON)
        grad_target = grad * ((-input).log1p() - input.log())
        return grad_input, grad_target


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """binary_cross_entropy(sigmoid(x), y) computed stably from the logits x; ``pos_weight``
    scales the positive term, ``weight`` the whole loss."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target, weight, pos_weight = float32_operands(input, target, weight, pos_weight)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"binary_cross_entropy_with_logits: target of shape {tuple(target.shape)} must have "
            f"the input's shape {tuple(input.shape)}"
        )
    # PyTorch's loss cannot be written into an integer target's type; an integral input is
    # refused first (logsigmoid's NotImplementedError)
    if input.dtype.is_floating_point and is_integral(target.dtype):
        raise RuntimeError(
            f"binary_cross_entropy_with_logits: target must be floating point, got "
            f"{target.dtype}; convert it with target.float()"
        )
    reduction = _reduction(size_average, reduce, reduction)
    fn = "binary_cross_entropy_with_logits"
    _refuse_differentiable(weight, fn, "weight")
    _refuse_differentiable(pos_weight, fn, "pos_weight")
    if weight is None and pos_weight is None and _half_pair(input, target, reduction):
        out = _HalfLoss.apply(input, target, reduction, _bce_logits, _bce_logits_grads, fn)
    else:
        loss = _bce_logits(input, target, pos_weight)
        if weight is not None:
            loss = loss * weight
        out = _reduce(loss, reduction, fn)
        if out.dtype != target.dtype:  # PyTorch's kernel writes the loss in the target's type
            out = out.to(target.dtype)
    # (PyTorch's node saves the weights too)
    saved = (input, target, weight, pos_weight)
    return _saving(out, "BinaryCrossEntropyWithLogitsBackward0", input, target, saved)


def _bce_logits(input: Tensor, target: Tensor, pos_weight: Tensor | None = None) -> Tensor:
    log_p = logsigmoid(input)
    # -(pw * y * log(p) + (1 - y) * log(1 - p)) with log(1 - p) = log(p) - x.
    scale = 1 if pos_weight is None else (pos_weight - 1) * target + 1
    return (1 - target) * input - scale * log_p


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """target * (log(target) - input) for log-probabilities ``input`` (target given as
    log-probabilities when ``log_target``); ``'batchmean'`` divides the sum by the batch size."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target = float32_operands(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn(
            "kl_div: reduction 'mean' divides the total loss by both the batch size and the "
            "support size; 'batchmean' divides only by the batch size, as the KL divergence's "
            "definition does. PyTorch will change 'mean' to behave as 'batchmean'.",
            stacklevel=2,
        )
    if is_integral(input.dtype) or is_integral(target.dtype):  # (after the warning, as PyTorch)
        raise RuntimeError(
            f"kl_div: integral inputs are not supported, got {input.dtype} and {target.dtype}; "
            f"convert them with .float()"
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t): 0 where t == 0.
        loss = target * target.masked_fill(target == 0, 1).log() - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction, "kl_div")


# -- likelihood losses -----------------------------------------------------------------------


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of Poisson targets: exp(x) - y * x for a log-rate x, or
    x - y * log(x + eps) for a rate x; ``full`` adds Stirling's approximation of log(y!)
    where y > 1."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, target = float32_operands(input, target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "poisson_nll_loss")


def _gaussian_variance(input: Tensor, var: Tensor | float) -> Tensor:
    """``var`` shaped to broadcast as PyTorch allows: the input's shape, the input's shape
    without its last axis, or the input's shape with one axis of size 1."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var must be non-negative, got {var}")
        return tw.full_like(input, var)
    bounds = extrema(var, inside(0, math.inf))
    if bounds is not None and bounds[0] < 0:
        raise ValueError(f"gaussian_nll_loss: var has negative entries (down to {bounds[0]})")
    shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape == shape:
        return var
    if var_shape == shape[:-1]:
        return var.unsqueeze(-1)
    if len(var_shape) == len(shape) and sum(v for i, v in zip(shape, var_shape) if i != v) == 1:
        return var
    raise ValueError(
        f"gaussian_nll_loss: var of shape {var_shape} is of incorrect size for the input of "
        f"shape {shape}: give the input's shape, the input's shape without its last axis, or "
        "the input's shape with one axis of size 1"
    )


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """0.5 * (log(var) + (x - y) ** 2 / var) for predicted means x and variances ``var``
    (clamped below at ``eps``; the clamp passes the gradient through, as in PyTorch);
    ``full`` adds 0.5 * log(2 pi)."""
    var = _gaussian_variance(input, var)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"gaussian_nll_loss: {reduction!r} is not a valid reduction")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")
