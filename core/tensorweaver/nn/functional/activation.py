"""Activations, shrinkage (``threshold``, ``hardshrink``, ``softshrink``, ``tanhshrink``),
``rrelu``, ``softmax``/``log_softmax``/``softmin``, ``gumbel_softmax``, ``glu`` and
``normalize``; the in-place ``*_`` variants PyTorch has. Random draws (``rrelu`` in training,
``gumbel_softmax``) use ``tw.rand`` on the input's device, so ``tw.manual_seed`` fixes them.

Branches that could overflow in the branch ``where`` discards take a clamped argument, so
that no inf reaches the gradient (``0 * inf`` would be NaN). ``softmax`` and
``log_softmax`` are composites a backend may fuse.

A float16 or bfloat16 input of the activations PyTorch has CPU kernels for (gelu, silu,
mish, softplus, hardswish, hardsigmoid, logsigmoid, glu, softshrink) is computed as those
kernels compute it: in float32, with their formulas and their backward formulas, rounded once
(``_HalfKernel``); other dtypes take the composition as before. elu, selu and celu are one
node for every dtype (``_Elu``), with PyTorch's gradient formula.
"""

from __future__ import annotations

import math
import numbers
import struct
import warnings
from typing import Any, Callable

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.gradients import of_result
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS
from tensorweaver.contract.dtypes import DType, bfloat16, float16
from tensorweaver.nn.functional.distance import half_unit
from tensorweaver.ops.apply import apply, labelled, out_needs_no_grad, written_out
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.elementwise import inference_alone, refuse_saved_inference
from tensorweaver.ops.fusion import reference_only
from tensorweaver.ops.linalg import autocast_operands
from tensorweaver.tensor import Tensor

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _need_floating(fn: str, x: Tensor) -> None:
    """PyTorch's float-only activation kernels refuse integer and bool inputs (rather than
    computing in the default float dtype)."""
    if x.dtype.kind in "biu":
        raise NotImplementedError(
            f"{fn}: not implemented for {x.dtype.name} input; convert it to a floating "
            "dtype first (x.float())"
        )


def _apply(
    fn: Callable[[Tensor], Tensor], input: Tensor, inplace: bool, overlap_checked: bool = True
) -> Tensor:
    """``fn(input)``; with PyTorch's ``inplace=True`` the result becomes ``input``'s value and
    ``input`` is returned. As in every in-place method of the core, ``fn`` then reads a
    frozen snapshot, so that the graph keeps the old value. Named as an in-place method (not
    setitem), so that writing into an ``expand()`` view is refused whatever the values, unless
    not ``overlap_checked`` (PyTorch's threshold_ writes there)."""
    if not inplace:
        return fn(input)
    result = fn(input._inplace_source())
    return (
        input._assign(result, "in-place activation") if overlap_checked else input._assign(result)
    )


def _piecewise_linear(
    fn: Callable[[Tensor], Tensor],
    slope: Callable[[Tensor], Tensor | tuple[Tensor, float]],
    name: str,
) -> Callable[[Tensor], Tensor]:
    """``fn`` (a piecewise linear activation) recorded as one node whose gradient is g where
    ``slope(x)`` (a bool mask) is True and 0 elsewhere, or g where mask and g * rate elsewhere
    for a pair (mask, rate), as PyTorch's ``<name>``: its backward under
    create_graph then reads x, so a gradient penalty on it is differentiable (where's
    gradient was a constant mask). Under ``saved_tensors_hooks`` the node also keeps
    ``slope``, so that backward takes the mask from what unpack gives for x, as PyTorch's
    node, which saves x alone (autograd/graph.py ``unpacked``)."""

    def recorded(x: Tensor) -> Tensor:
        if not (x.requires_grad and tw.is_grad_enabled()):
            return fn(x)
        with tw.no_grad():
            out, rate = fn(x), slope(x)
        backward = name[: name.rindex("Backward")] + "BackwardBackward0"  # its gradient's node
        saved = (rate, backward, slope) if SAVED_TENSORS_HOOKS else (rate, backward)
        node = apply("piecewise_linear", out.native, out.dtype, (x,), saved)
        return labelled(node, name, x)

    return recorded


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(0, x)."""
    return _apply(tw.relu, input, inplace)


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """x clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError(
            f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})"
        )
    if input.dtype.kind == "b":
        raise RuntimeError("hardtanh: Bool inputs not supported for hardtanh; convert the input")
    if input.dtype.kind == "u" and min_val < 0:
        raise RuntimeError(
            f"hardtanh: cannot do hardtanh on an unsigned type ({input.dtype.name}) with a "
            f"negative lower bound ({min_val}); convert the input to a signed dtype"
        )
    if not inplace and input._inference and input.requires_grad and tw.is_grad_enabled():
        # (PyTorch's autograd skips its kernel, an out= one, which then refuses)
        raise out_needs_no_grad("hardtanh")
    return _apply(
        _piecewise_linear(
            lambda x: _hard_clamp(x, min_val, max_val),
            lambda x: (x > min_val) & (x < max_val),
            "HardtanhBackward0",
        ),
        input,
        inplace,
    )


def _hard_clamp(x: Tensor, low: float, high: float) -> Tensor:
    """``x`` clamped to [low, high] (integer bounds for an integer ``x``, as PyTorch),
    whose gradient is zero at the bounds too: PyTorch's hardtanh passes it only strictly
    inside, where ``clamp`` passes it at the bounds as well."""
    if not x.dtype.is_floating_point:
        return x.clamp(int(low), int(high))
    out = x.clamp(low, high)
    if x.requires_grad and tw.is_grad_enabled():
        out = tw.where((x > low) & (x < high), x, out.detach())
    return out


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    return _leaky_relu(input, negative_slope, inplace, "LeakyRelu")


def _leaky_relu(input: Tensor, negative_slope: float, inplace: bool, name: str) -> Tensor:
    """``name``'s node; in place PyTorch's ``<name>Backward1``, which saves the output."""
    _need_floating("leaky_relu", input)
    recorded = _piecewise_linear(
        lambda x: tw.where(x > 0, x, x * negative_slope),
        lambda x: (x > 0, negative_slope),
        f"{name}Backward{int(inplace)}",
    )
    if inplace and negative_slope < 0:
        # the output's sign no longer tells where the input was negative: PyTorch's
        # backward refuses, so a graph through it fails when (and only when) it runs
        return _apply(
            lambda x: recorded(_RefusedBackward.apply(x, _LEAKY_NEGATIVE_IN_PLACE)), input, True
        )
    return _apply(recorded, input, inplace)


_LEAKY_NEGATIVE_IN_PLACE = (
    "leaky_relu backward: the in-place leaky_relu (or rrelu in eval) ran with a negative "
    "slope, so its output no longer tells where its input was negative and the gradient "
    "cannot be computed; call the out-of-place version (inplace=False) instead"
)
_ELU_NEGATIVE_IN_PLACE = (
    "elu backward: the in-place elu (or celu) ran with a negative slope (alpha < 0), so its "
    "output no longer tells where its input was negative and the gradient cannot be "
    "computed; call the out-of-place version (inplace=False) instead"
)


class _RefusedBackward(Function):
    """The identity, whose backward raises ``message`` (RuntimeError)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, message: str) -> Tensor:
        ctx.message = message
        return x

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        raise RuntimeError(ctx.message)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _elu_kernel(input, alpha, 1.0, 1.0, inplace, "Elu")


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return _elu_kernel(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "Elu")


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    if alpha == 0:
        raise RuntimeError("celu: alpha cannot be 0 (it divides x); use relu for the limit")
    # torch's derivatives.yaml differentiates celu with input_scale 1.0 / alpha.toFloat()
    narrowed = _f32(alpha)
    backward_scale = 1 / narrowed if narrowed else math.copysign(math.inf, alpha)
    return _elu_kernel(input, alpha, 1.0, 1 / alpha, inplace, "Celu", backward_scale)


def _elu_kernel(
    input: Tensor,
    alpha: float,
    scale: float,
    input_scale: float,
    inplace: bool,
    name: str,
    backward_input_scale: float | None = None,
) -> Tensor:
    """PyTorch's elu kernel, which selu and celu call with their coefficients: scale * x
    where x > 0, else alpha * scale * (exp(x * input_scale) - 1); its gradient's kernel
    takes ``backward_input_scale`` (default ``input_scale``). In place, PyTorch's node
    (``<name>Backward1``) saves the output and its gradient reads it, not the input."""
    _need_floating(name.lower(), input)
    half = input.dtype is float16 or input.dtype is bfloat16
    in_float32 = half or input.dtype.itemsize < 8
    coefficients = backward = _elu_coefficients(alpha, scale, input_scale, in_float32)
    if backward_input_scale is not None:
        backward = _elu_coefficients(alpha, scale, backward_input_scale, in_float32)

    def computed(x: Tensor) -> Tensor:
        if not (x.requires_grad and tw.is_grad_enabled()):
            return _elu_values(x, *coefficients)
        if inference_alone(x):  # (PyTorch's autograd skips its kernel)
            with tw.no_grad():
                return _elu_values(x, *coefficients)
        out = _Elu.apply(x, coefficients, backward, inplace)
        return labelled(out, f"{name}Backward{int(inplace)}", x)

    return _apply(computed, input, inplace)


def _elu_coefficients(
    alpha: float, scale: float, input_scale: float, in_float32: bool
) -> tuple[float, float, float]:
    """(alpha * scale, scale, input_scale), as PyTorch's kernel multiplies them: in float32
    for an input of a lower precision than float64."""
    if not in_float32:
        return alpha * scale, scale, input_scale
    return _f32(_f32(alpha) * _f32(scale)), _f32(scale), _f32(input_scale)


def _elu_values(x: Tensor, negative: float, positive: float, inner: float) -> Tensor:
    """The elu kernel's values; a float16 or bfloat16 input's as PyTorch's CPU kernel
    computes them: exp(x) - 1 in float32, rounded once (else expm1, exact near 0)."""
    low = x.dtype
    if low is float16 or low is bfloat16:
        x = x.float()
        below = ((x.clamp(max=0) * inner).exp() - 1) * negative
        return tw.where(x > 0, x * positive, below).to(low)
    # (clamped before the scaling: celu's 1 / alpha is negative for a negative alpha)
    clamped = x.clamp(max=0)
    below = (clamped if inner == 1 else clamped * inner).expm1()
    return tw.where(x > 0, x if positive == 1 else x * positive, below * negative)


class _Elu(Function):
    """The elu kernel recorded as one node, with PyTorch's gradient: from the input,
    g * input_scale * alpha * scale * exp(x * input_scale) where x <= 0 (the derivative of
    the values' expm1 loses all precision once exp(x) is below expm1's rounding step); in
    place, from the output y: g * input_scale * (y + alpha * scale). Its backward is made
    of tensor ops whose own gradient is PyTorch's double backward (nothing at x = 0)."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, coefficients: tuple, backward_coefficients: tuple, is_result: bool
    ) -> Tensor:
        out = _elu_values(x, *coefficients)
        ctx.save_for_backward(out if is_result else x)
        ctx.coefficients, ctx.is_result = backward_coefficients, is_result
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (saved,) = ctx.saved_tensors
        negative, positive, inner = ctx.coefficients
        low = saved.dtype
        if low is float16 or low is bfloat16:  # in float32, rounded once
            g, saved = g.float(), saved.float()
        if ctx.is_result:
            if negative < 0:  # the output's sign no longer tells the input's, as PyTorch
                raise RuntimeError(_ELU_NEGATIVE_IN_PLACE)
            below = g * inner * (tw.where(saved < 0, saved, 0.0) + negative)
        else:
            below = g * inner * negative * tw.where(saved < 0, saved * inner, 0.0).exp()
        grad = tw.where(saved <= 0, below, g * positive)  # (NaN: the positive side's)
        return grad.to(low), None, None, None


def relu_(input: Tensor) -> Tensor:
    """``relu`` in place."""
    return relu(input, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` in place."""
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` in place."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` in place."""
    return elu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """``selu`` in place."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` in place."""
    return celu(input, alpha, inplace=True)


def _threshold(input: Tensor, limit: float, value: float, inplace: bool) -> Tensor:
    for name, number in (("threshold", limit), ("value", value)):
        if not isinstance(number, numbers.Number):
            raise TypeError(f"threshold: {name} must be a number, got {type(number).__name__}")
    if input.dtype.kind == "b":
        raise NotImplementedError("threshold: not implemented for bool input; convert it first")
    return _apply(
        _piecewise_linear(
            lambda x: x.masked_fill(x <= limit, value),
            lambda x: ~(x <= limit),
            "ThresholdBackward1" if inplace else "ThresholdBackward0",  # (threshold_'s)
        ),
        input,
        inplace,
        overlap_checked=False,
    )


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (NaN stays NaN)."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` in place."""
    return _threshold(input, threshold, value, True)


def hardshrink(input: Tensor, lambd: float = 0.5, *, out: Tensor | None = None) -> Tensor:
    """x where |x| > lambd, else 0 (written into ``out`` where given, as PyTorch's)."""
    if out is not None:
        from tensorweaver.ops.out_arguments import call_with_out

        return call_with_out("hardshrink", hardshrink, (input, lambd), {}, out)
    _need_floating("hardshrink", input)
    return _piecewise_linear(
        lambda x: x.masked_fill(_shrunk(x, lambd), 0),
        lambda x: _shrink_slope(x, lambd),
        "HardshrinkBackward0",
    )(input)


def _shrunk(x: Tensor, lambd: float) -> Tensor:
    """Where |x| <= lambd (not at a NaN): the shrinks' zero."""
    return (x >= -lambd) & (x <= lambd)


def _shrink_slope(x: Tensor, lambd: float) -> Tensor:
    """Where the shrinks pass the gradient: |x| > lambd (not at a NaN, as PyTorch's)."""
    return (x < -lambd) | (x > lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambd must be non-negative, got {lambd}")
    _need_floating("softshrink", input)
    return _piecewise_linear(
        # x - lambd in float32, rounded once; PyTorch's backward compares a half input with
        # lambd in the half type, as _shrink_slope does
        _rounded_once(lambda x: x - x.clamp(-lambd, lambd)),
        lambda x: _shrink_slope(x, lambd),
        "SoftshrinkBackward0",
    )(input)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - tw.tanh(input)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """x where x > 0, else slope * x: in training each element draws its slope uniformly
    from [lower, upper]; otherwise the slope is their mean."""
    if lower > upper:
        raise RuntimeError(
            f"rrelu: the lower bound {lower} should be less than or equal to the upper bound "
            f"{upper}"
        )
    if tw.is_grad_enabled():  # (PyTorch's kernel takes a noise tensor: its node saves input)
        refuse_saved_inference("rrelu_with_noise", (input,), (input,))
    if not training:
        return _leaky_relu(input, (lower + upper) / 2, inplace, "RreluWithNoise")
    _need_floating("rrelu", input)

    def draw(x: Tensor) -> Tensor:
        slope = tw.rand(x.shape, dtype=x.dtype, device=x.device) * (upper - lower) + lower
        return tw.where(x > 0, x, x * slope)

    return _apply(draw, input, inplace)


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """``rrelu`` in place."""
    return rrelu(input, lower, upper, training, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly (``approximate='none'``) or with the tanh approximation."""
    if approximate == "none":
        return _GELU_ERF(input)
    if approximate == "tanh":
        return _GELU_TANH(input)
    raise RuntimeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def _gelu_erf(x: Tensor) -> Tensor:
    return 0.5 * x * (1 + (x * (1 / math.sqrt(2))).erf())


def _gelu_tanh(x: Tensor) -> Tensor:
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1 + inner.tanh())


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return tw.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return tw.tanh(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    return _apply(_SILU, input, inplace)


def _silu(x: Tensor) -> Tensor:
    return x * tw.sigmoid(x)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, or x itself where beta * x > threshold."""
    reference = lambda x: _softplus(x, beta, threshold)  # noqa: E731
    half = _softplus_half(beta, threshold)
    saving = _softplus_grad(beta, threshold)
    return _opmath(reference, *half, "SoftplusBackward0", saving)(input)


def _softplus(x: Tensor, beta: float, threshold: float) -> Tensor:
    z = x * beta
    smooth = z.clamp(max=threshold).exp().log1p() / beta
    return tw.where(z > threshold, x, smooth)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _apply(_MISH, input, inplace)


def _mish(x: Tensor) -> Tensor:
    return x * _softplus(x, 1.0, 20.0).tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (1 + input.abs())


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x / 6 + 1 / 2, 0, 1)."""
    return _apply(_HARDSIGMOID, input, inplace)


def _hardsigmoid(x: Tensor) -> Tensor:
    if x.requires_grad and tw.is_grad_enabled():
        return _Hardsigmoid.apply(x)
    return _hardsigmoid_half(x)


class _Hardsigmoid(Function):
    """hardsigmoid of a float32 or float64 input as PyTorch's CPU kernel computes it in
    every dtype: clamp(x + 3, 0, 6) / 6, and a backward that multiplies by the float32 1/6
    (``_hardsigmoid_half``, ``_hardsigmoid_half_grad``); differentiated op by op, x / 6
    rounds differently in float64."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return _hardsigmoid_half(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return _hardsigmoid_half_grad(g, x, x.dtype)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * clamp(x + 3, 0, 6) / 6."""
    return _apply(_HARDSWISH, input, inplace)


def _hardswish(x: Tensor) -> Tensor:
    return x * _hard_clamp(x + 3, 0.0, 6.0) / 6


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)): x - log(1 + exp(x)) for negative x, -log(1 + exp(-x)) otherwise, so
    it never overflows (and its gradient at 0 is sigmoid(0) = 1/2)."""
    if SAVED_TENSORS_HOOKS and input.requires_grad and tw.is_grad_enabled():
        if input.dtype is not float16 and input.dtype is not bfloat16:
            _need_floating("logsigmoid", input)
            return labelled(_LogSigmoidSaving.apply(input), "LogSigmoidBackward0", input)
    return _LOGSIGMOID(input)


class _LogSigmoidSaving(Function):
    """logsigmoid as PyTorch's LogSigmoidBackward0 under ``saved_tensors_hooks``: it saves
    (packs) the input and its buffer exp(-|x|), and its backward reads what unpack gives for
    each (under ``create_graph`` the buffer's value, differentiable as exp(-|x|))."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x, (-x.abs()).exp())
        return _logsigmoid(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        x, buffer = ctx.saved_tensors
        if tw.is_grad_enabled():
            made = (-x.abs()).exp()
            buffer = made + (buffer - made).detach()
        q = buffer / (1 + buffer)
        return tw.where(x < 0, (1 - q) * g, q * g)


def _logsigmoid(x: Tensor) -> Tensor:
    negative, positive = x.clamp(max=0), x.clamp(min=0)
    return tw.where(x < 0, negative - negative.exp().log1p(), -(-positive).exp().log1p())


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; ``weight`` has one element or one per channel (axis 1)."""
    low = autocast_dtype()
    if low is not None:  # on PyTorch's lower-precision list: both in the autocast dtype
        input, weight = autocast_operands(low, input, weight)
    if inference_alone(input, weight):  # (PyTorch's autograd skips its kernel)
        with tw.no_grad():
            return prelu(input, weight)
    if input.dtype is not weight.dtype:  # PyTorch's kernel refuses (a float64 input in autocast)
        raise RuntimeError(
            f"prelu: Type promoting not supported. Got {input.dtype.name} and "
            f"{weight.dtype.name}; convert the input with .to({weight.dtype.name}) (or the "
            "weight to the input's dtype)"
        )
    if weight.dim() > 1:
        raise RuntimeError(
            f"prelu: expected weight to be a scalar or 1-D tensor, got shape {tuple(weight.shape)}"
        )
    if weight.numel() == 1:  # the output has the input's shape, a 0-d input included
        weight = weight.reshape(())
    else:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                f"prelu: weight of shape {tuple(weight.shape)} needs 1 or {channels} elements "
                f"for the input of shape {tuple(input.shape)}"
            )
        weight = weight.reshape(-1, *([1] * (input.dim() - 2)))
    return labelled(
        tw.where(input > 0, input, weight * input), "PreluKernelBackward0", input, weight
    )


# -- float16/bfloat16: PyTorch's CPU kernels --------------------------------------------------


def _f32(value: float) -> float:
    """``value`` rounded to float32: a constant PyTorch's kernel computes in float."""
    return struct.unpack("f", struct.pack("f", value))[0]


class _HalfKernel(Function):
    """An activation of a float16 or bfloat16 input computed as PyTorch's CPU kernel: the
    forward formula ``values`` and the backward kernel ``grad`` (the input's gradient from the
    output's gradient, the input and the input's dtype) evaluated in float32 ("opmath") on
    the widened tensors, each rounded once to the input's dtype. Composed in the half type
    instead, every step rounds (gelu's bfloat16 result was off by up to ~250 ulps near zero);
    differentiated op by op in float32, the gradient sums differently rounded terms. The
    backward is made of tensor ops, so it differentiates again."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, values: Callable, grad: Callable) -> Tensor:
        ctx.save_for_backward(x)
        ctx.grad = grad
        return values(x.float()).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        return ctx.grad(g.float(), x.float(), x.dtype).to(x.dtype), None, None


class _SavesInput(Function):
    """``values(x)`` as one node that saves its input only, as PyTorch's GeluBackward0,
    SiluBackward0, MishBackward0, SoftplusBackward0, HardswishBackward0 and GluBackward0:
    under ``saved_tensors_hooks`` it packs ``x`` once and its backward ``grad(g, x)``
    (tensor ops, which differentiate again) reads what unpack gives."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, values: Callable, grad: Callable) -> Tensor:
        ctx.save_for_backward(x)
        ctx.grad = grad
        return values(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        return ctx.grad(g, x), None, None


def _opmath(
    reference: Callable[[Tensor], Tensor],
    values: Callable[[Tensor], Tensor],
    grad: Callable[[Tensor, Tensor, DType], Tensor],
    name: str,
    saving: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> Callable[[Tensor], Tensor]:
    """``reference`` (differentiated op by op) for an input of another dtype; for a float16
    or bfloat16 one, PyTorch's kernel: ``values`` and ``grad`` (see ``_HalfKernel``), its
    node named as PyTorch's (``name``). Under ``saved_tensors_hooks``, ``saving(g, x)``
    (where given: the input's gradient in its own dtype) makes it one node that packs only
    its input, as PyTorch's (:class:`_SavesInput`)."""

    fn = name[: name.index("Backward")].lower()

    def computed(x: Tensor) -> Tensor:
        if inference_alone(x):  # (PyTorch's autograd skips its kernel; steps would record)
            with tw.no_grad():
                return computed(x)
        dtype = x.dtype
        if dtype is not float16 and dtype is not bfloat16:
            _need_floating(fn, x)
            if SAVED_TENSORS_HOOKS and saving is not None and x.requires_grad:
                if tw.is_grad_enabled():
                    return labelled(_SavesInput.apply(x, reference, saving), name, x)
            return labelled(reference(x), name, x)
        if x.requires_grad and tw.is_grad_enabled():
            return labelled(_HalfKernel.apply(x, values, grad), name, x)
        return values(x.float()).to(dtype)

    return computed


def _rounded_once(fn: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """``fn`` of a float16 or bfloat16 input computed in float32 and rounded once (for a
    forward formula whose gradient is recorded elsewhere)."""

    def computed(x: Tensor) -> Tensor:
        dtype = x.dtype
        if dtype is float16 or dtype is bfloat16:
            return fn(x.float()).to(dtype)
        return fn(x)

    return computed


#: PyTorch's float constants of gelu: 1/sqrt(2), sqrt(2/pi), 0.044715, 3 * 0.044715 and
#: 1/sqrt(2*pi) (the normal density's factor).
_SQRT1_2 = _f32(1 / math.sqrt(2))
_GELU_TANH_BETA = _f32(math.sqrt(2 / math.pi))
_GELU_KAPPA = _f32(0.044715)
_GELU_KAPPA3 = _f32(3 * _GELU_KAPPA)
_GELU_PDF = _f32(1 / math.sqrt(2 * math.pi))


def _gelu_erf_half(x: Tensor) -> Tensor:
    return x * 0.5 * (1 + (x * _SQRT1_2).erf())


def _gelu_erf_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    return _gelu_erf_slope(g, x, _SQRT1_2, _GELU_PDF)


def _gelu_erf_slope(g: Tensor, x: Tensor, sqrt1_2: float, pdf: float) -> Tensor:
    """gelu's input gradient g * (Phi(x) + x * phi(x)), with the constants 1/sqrt(2) and
    1/sqrt(2*pi) given (exact, or rounded to float32 as PyTorch's half kernels)."""
    cdf = 0.5 * (1 + (x * sqrt1_2).erf())
    return g * (cdf + x * (pdf * (x * x * -0.5).exp()))


def _gelu_tanh_half(x: Tensor) -> Tensor:
    inner = _GELU_TANH_BETA * (x + _GELU_KAPPA * (x * x * x))
    return 0.5 * x * (1 + inner.tanh())


def _gelu_tanh_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    return _gelu_tanh_slope(g, x, _GELU_TANH_BETA, _GELU_KAPPA, _GELU_KAPPA3)


def _gelu_tanh_slope(g: Tensor, x: Tensor, beta: float, kappa: float, kappa3: float) -> Tensor:
    """The tanh approximation's input gradient, with its constants sqrt(2/pi), 0.044715 and
    3 * 0.044715 given (exact, or rounded to float32 as PyTorch's half kernels)."""
    t = (beta * (x + kappa * (x * x * x))).tanh()
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (beta * (1 + kappa3 * (x * x))))


def _gelu_erf_grad(g: Tensor, x: Tensor) -> Tensor:
    return _gelu_erf_slope(g, x, 1 / math.sqrt(2), 1 / math.sqrt(2 * math.pi))


def _gelu_tanh_grad(g: Tensor, x: Tensor) -> Tensor:
    return _gelu_tanh_slope(g, x, math.sqrt(2 / math.pi), 0.044715, 3 * 0.044715)


def _silu_grad(g: Tensor, x: Tensor) -> Tensor:
    return _silu_slope(g, tw.sigmoid(x), x)


def _silu_slope(g: Tensor, s: Tensor, x: Tensor) -> Tensor:
    """silu's input gradient g * s * (1 + x * (1 - s)), given s = sigmoid(x)."""
    return g * s * (1 + x * (1 - s))


def _mish_grad(g: Tensor, x: Tensor) -> Tensor:
    return _mish_slope(g, x, _softplus(x, 1.0, 20.0).tanh(), tw.sigmoid(x))


def _mish_slope(g: Tensor, x: Tensor, t: Tensor, s: Tensor) -> Tensor:
    """mish's input gradient g * (t + x * s * (1 - t^2)), given t = tanh(softplus(x)) and
    s = sigmoid(x)."""
    return g * (t + x * s * (1 - t * t))


def _hardswish_grad(g: Tensor, x: Tensor) -> Tensor:
    """hardswish's input gradient (the half kernel's: its constants are exact in float32)."""
    return _hardswish_half_grad(g, x, x.dtype)


def _softplus_grad(beta: float, threshold: float) -> Callable[[Tensor, Tensor], Tensor]:
    """softplus's input gradient: g * sigmoid(beta * x), g itself above the threshold."""

    def grad(g: Tensor, x: Tensor) -> Tensor:
        z = x * beta
        e = z.clamp(max=threshold).exp()  # the clamp changes only the discarded branch
        return tw.where(z > threshold, g, g * e / (e + 1))

    return grad


def _glu_grad(dim: int) -> Callable[[Tensor, Tensor], Tensor]:
    """glu's input gradient: sigmoid(b) * g for a, (1 - s) * s * a * g for b."""

    def grad(g: Tensor, x: Tensor) -> Tensor:
        a, b = x.chunk(2, dim)
        s = tw.sigmoid(b)
        return tw.cat([s * g, (1 - s) * s * a * g], dim)

    return grad


def _sigmoid_f32(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), as PyTorch's kernels write the sigmoid."""
    return 1 / (1 + (-x).exp())


def _silu_half(x: Tensor) -> Tensor:
    return x / (1 + (-x).exp())


def _silu_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    return _silu_slope(g, _sigmoid_f32(x), x)


def _mish_half(x: Tensor) -> Tensor:
    return x * x.exp().log1p().tanh()


def _mish_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    return _mish_slope(g, x, x.exp().log1p().tanh(), _sigmoid_f32(x))


def _softplus_half(beta: float, threshold: float) -> tuple[Callable, Callable]:
    beta, threshold = _f32(beta), _f32(threshold)

    def values(x: Tensor) -> Tensor:
        z = x * beta
        return tw.where(z > threshold, x, z.clamp(max=threshold).exp().log1p() / beta)

    def grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
        z = x * beta
        e = z.clamp(max=threshold).exp()  # the clamp changes only the discarded branch
        return tw.where(z > threshold, g, g * e / (e + 1))

    return values, grad


def _hardsigmoid_half(x: Tensor) -> Tensor:
    return (x + 3).clamp(0, 6) / 6


def _hardsigmoid_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    return tw.where((x > -3) & (x < 3), g * _f32(1 / 6), 0.0)


def _hardswish_half(x: Tensor) -> Tensor:
    return x * (x + 3).clamp(0, 6) / 6


def _hardswish_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    return tw.where(x <= -3, 0.0, tw.where(x >= 3, g, g * (x / 3 + 0.5)))


def _logsigmoid_half(x: Tensor) -> Tensor:
    return x.clamp(max=0) - (-x.abs()).exp().log1p()


def _logsigmoid_half_grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
    # PyTorch's forward saves exp(-|x|) for the backward in the input's dtype (rounded)
    saved = (-x.abs()).exp().to(low).float()
    q = saved / (1 + saved)
    return tw.where(x < 0, (1 - q) * g, q * g)


def _glu_half(dim: int) -> tuple[Callable, Callable]:
    def values(x: Tensor) -> Tensor:
        a, b = x.chunk(2, dim)
        return a * _sigmoid_f32(b)

    def grad(g: Tensor, x: Tensor, low: DType) -> Tensor:
        # PyTorch's backward writes sigmoid(b) into the input's dtype first (rounded), and
        # multiplies it by g in that dtype (exact in float32, then rounded once)
        a, b = x.chunk(2, dim)
        s = _sigmoid_f32(b).to(low).float()
        return tw.cat([s * g, (1 - s) * s * a * g], dim)

    return values, grad


#: The activations without parameters, each dispatch built once (no closure per call).
_GELU_ERF = _opmath(_gelu_erf, _gelu_erf_half, _gelu_erf_half_grad, "GeluBackward0", _gelu_erf_grad)
_GELU_TANH = _opmath(
    _gelu_tanh, _gelu_tanh_half, _gelu_tanh_half_grad, "GeluBackward0", _gelu_tanh_grad
)
_SILU = _opmath(_silu, _silu_half, _silu_half_grad, "SiluBackward0", _silu_grad)
_MISH = _opmath(_mish, _mish_half, _mish_half_grad, "MishBackward0", _mish_grad)
_HARDSIGMOID = _opmath(
    _hardsigmoid, _hardsigmoid_half, _hardsigmoid_half_grad, "HardsigmoidBackward0"
)
_HARDSWISH = _opmath(
    _hardswish, _hardswish_half, _hardswish_half_grad, "HardswishBackward0", _hardswish_grad
)
_LOGSIGMOID = _opmath(_logsigmoid, _logsigmoid_half, _logsigmoid_half_grad, "LogSigmoidBackward0")


# -- softmax ---------------------------------------------------------------------------------


def _softmax_axis(input: Tensor, dim: int | None, fn: str) -> int:
    """``dim`` as a non-negative axis; None picks PyTorch's legacy implicit dimension."""
    if input.dtype.is_complex:  # PyTorch's CPU kernels have no complex softmax either
        raise NotImplementedError(f"{fn}: not implemented for {input.dtype.name}")
    ndim = input.dim()
    if dim is None:
        warnings.warn(
            f"Implicit dimension choice for {fn} has been deprecated. Change the call to "
            "include dim=X as an argument.",
            stacklevel=3,
        )
        dim = 0 if ndim in (0, 1, 3) else 1
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"{fn}: dim {dim} is out of range for a {ndim}-D input")
    return dim % max(ndim, 1)


def _softmax_values(x: Tensor, axis: int) -> Tensor:
    e = _shifted(x.contiguous(), axis).exp()  # (C-ordered, as PyTorch's result, whatever x's)
    return e / e.sum(axis, keepdim=True)


def _softmax_grad(y: Tensor, g: Tensor, axis: int) -> Tensor:
    """softmax's input gradient from its output ``y`` and output gradient ``g``."""
    return y * (g - (g * y).sum(axis, keepdim=True))


def _log_softmax_grad(y: Tensor, g: Tensor, axis: int) -> Tensor:
    """log_softmax's input gradient from its output ``y`` and output gradient ``g``."""
    return g - y.exp() * g.sum(axis, keepdim=True)


def _log_softmax_values(x: Tensor, axis: int) -> Tensor:
    z = _shifted(x.contiguous(), axis)  # (C-ordered, as PyTorch's result, whatever x's)
    return z - z.exp().sum(axis, keepdim=True).log()


class _SoftmaxLike(Function):
    """``values(x, axis)`` (softmax, log_softmax) with PyTorch's gradient ``grad(y, g, axis)``
    of its output ``y``, in tensor ops that differentiate again (the saved output comes back
    attached to this node).

    The composite's double backward differentiates this reference: autograd through the
    exponential and the division instead gives a second derivative made of separately
    rounded terms that cancel along the axis (softmax ignores a shift of its input). In
    float32 what is left of them, carried through the scores' matmul, made
    MultiheadAttention's second-order gradients 4-24x less accurate than PyTorch's."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, axis: int, values: Callable, grad: Callable) -> Tensor:
        y = values(x, axis)
        ctx.save_for_backward(y)
        ctx.axis, ctx.grad = axis, grad
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (y,) = ctx.saved_tensors
        low = y.dtype
        if low is float16 or low is bfloat16:  # (in float32, rounded once, as PyTorch's kernel)
            return ctx.grad(y.float(), g.float(), ctx.axis).to(low), None, None, None
        return ctx.grad(y, g, ctx.axis), None, None, None


def _one_node(values: Callable, grad: Callable) -> Callable[[Tensor, int], Tensor]:
    """The reference decomposition of a composite computed by ``values``: one graph node
    (``_SoftmaxLike``) where a gradient is recorded."""

    def reference(x: Tensor, axis: int) -> Tensor:
        if x.requires_grad and tw.is_grad_enabled():
            return _SoftmaxLike.apply(x, axis, values, grad)
        return values(x, axis)

    return reference


#: exp(x) / sum(exp(x)) along ``axis``: the decomposition of the ``softmax`` composite.
softmax_reference = _one_node(_softmax_values, _softmax_grad)
#: x - log(sum(exp(x))) along ``axis``, computed stably: that of ``log_softmax``.
log_softmax_reference = _one_node(_log_softmax_values, _log_softmax_grad)


def _shifted(x: Tensor, axis: int) -> Tensor:
    """``x`` less its max along ``axis`` (so exp cannot overflow); an empty axis has no max
    and nothing to shift. The max is a constant of the result: it needs no gradient."""
    if x.dim() and x.shape[axis] == 0:
        return x
    return x - x.amax(axis, keepdim=True).detach()


#: Each composite's input gradient written from its output (``fused_or_reference``'s
#: ``from_output``, which only a ``create_graph`` backward calls): one node saving ``(g, y)``
#: (autograd/gradients.py ``of_result``), as PyTorch's SoftmaxBackwardDataBackward0, so that
#: a write through the output's ``.data`` reaches every term of the second-order gradient
#: (a composition's intermediates would keep the old values).
_FROM_OUTPUT = {
    "softmax": lambda y, g, axis: of_result("softmax", g, y, axis),
    "log_softmax": lambda y, g, axis: of_result("log_softmax", g, y, axis),
}


def _softmax_like(
    name: str, reference: Callable[[Tensor, int], Tensor], x: Tensor, axis: int
) -> Tensor:
    if x.dtype.kind not in "fc":
        raise NotImplementedError(
            f"{name}: not implemented for {x.dtype.name} input; convert it to a floating "
            "point dtype first, or pass dtype=tw.float32"
        )
    if SAVED_TENSORS_HOOKS:
        # PyTorch's node packs its result: the reference's one node (_SoftmaxLike) saves it
        # through the hooks and its backward reads what unpack gives (a fused node would keep
        # the kernel's arrays)
        with reference_only():
            return _softmax_node(name, reference, x, axis)
    return _softmax_node(name, reference, x, axis)


def _softmax_node(
    name: str, reference: Callable[[Tensor, int], Tensor], x: Tensor, axis: int
) -> Tensor:
    rule = _FROM_OUTPUT[name]
    if x.dim() == 0:  # one element: the reference's one node takes it as it is, as PyTorch's
        with reference_only():  # (a backend's kernel may take no 0-d input)
            return fused_or_reference(name, reference, (x,), axis, from_output=rule)
    return fused_or_reference(name, reference, (x,), axis, from_output=rule)


def _cast(input: Tensor, dtype: DType | None) -> Tensor:
    return input if dtype is None else input.to(dtype)


def softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None
) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed in ``dtype`` when given)."""
    x = _cast(input, dtype)
    axis = _softmax_axis(x, dim, "softmax")
    return _softmax_like("softmax", softmax_reference, x, axis)


def log_softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None
) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably (in ``dtype`` when given)."""
    x = _cast(input, dtype)
    axis = _softmax_axis(x, dim, "log_softmax")
    return _softmax_like("log_softmax", log_softmax_reference, x, axis)


def softmin(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | None = None
) -> Tensor:
    """softmax(-x) along ``dim``."""
    x = _cast(-input, dtype)  # negated first, as PyTorch: a uint8 input wraps
    axis = _softmax_axis(x, dim, "softmin")
    return _softmax_like("softmax", softmax_reference, x, axis)


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """softmax((logits + g) / tau) along ``dim`` with Gumbel(0, 1) noise ``g``; with ``hard``
    the one-hot of its argmax, whose gradient is the soft sample's (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    if not logits.dtype.is_floating_point:  # (PyTorch's exponential draw refuses)
        raise RuntimeError(
            "gumbel_softmax: the Gumbel noise is drawn from a continuous distribution, so "
            f"logits must be floating point, got {logits.dtype.name}; convert them first"
        )
    uniform = tw.rand(logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(-uniform).log1p()).log()  # -log(Exponential(1)), never log(0) of 1 - u
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    ones = tw.ones(index.shape, dtype=logits.dtype, device=logits.device)
    y_hard = tw.zeros_like(logits).scatter(dim, index, ones)
    return y_hard - y_soft.detach() + y_soft


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``."""
    if input.dim() == 0 or input.shape[dim] % 2:
        raise RuntimeError(
            f"glu: dimension {dim} of the input of shape {tuple(input.shape)} must have an "
            "even size, to be halved"
        )
    return _opmath(lambda x: _glu(x, dim), *_glu_half(dim), "GluBackward0", _glu_grad(dim))(input)


def _glu(x: Tensor, dim: int) -> Tensor:
    a, b = x.chunk(2, dim)
    return a * tw.sigmoid(b)


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``; ``out=`` as PyTorch's (its division's)."""
    if p == 2 and input.dtype in (float16, bfloat16):  # the norm in float32, as torch's
        result = half_unit(input, dim, eps, clamp_passes_gradient=False)
    else:
        # divided by the norm expanded to the input's shape, as torch's: a hook on the
        # division sees the divisor's gradient in that shape
        result = input / input.norm(p=p, dim=dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return result
    # (torch's is div(input, denom, out=out): its TensorIterator checks out against input)
    return written_out("normalize", result, out, inputs=(input,))
