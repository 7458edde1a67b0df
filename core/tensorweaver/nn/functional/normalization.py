"""Normalization: ``batch_norm``, ``instance_norm``, ``layer_norm``, ``group_norm`` and
``rms_norm``.

Each standardizes over some axes with the biased variance, then applies a per-channel or
per-element affine map. ``layer_norm`` and ``instance_norm`` (on the input's statistics),
affine maps included, are composites a backend may fuse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import tensorweaver as tw
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS
from tensorweaver.contract.dtypes import SCALAR_TYPE_NAMES as _KERNEL_NAME
from tensorweaver.nn.functional import half_norms
from tensorweaver.nn.functional.conv import kernel_layout
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.elementwise import refuse_complex
from tensorweaver.tensor import Tensor

#: rms_norm's default eps: the machine epsilon of the dtype it computes in. PyTorch's kernel
#: computes a float16 or bfloat16 input in float32 and takes float32's epsilon then (its
#: documentation says the input's; its code and results say float32's).
_EPS = {
    "float16": 2.0**-23,
    "bfloat16": 2.0**-23,
    "float32": 2.0**-23,
    "float64": 2.0**-52,
    "complex64": 2.0**-23,
    "complex128": 2.0**-52,
}


def _standardize(x: Tensor, dims: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(x - mean) / sqrt(var + eps)`` over ``dims`` (biased variance), the mean and the
    variance (both keeping dims)."""
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, correction=0, keepdim=True)
    return (x - mean) * (var + eps).rsqrt(), mean, var


def _parameter_dtypes(
    fn: str, input: Tensor, params: dict[str, Tensor | None], read_order: Sequence[str]
) -> bool:
    """PyTorch 2.13's CPU rule for the dtypes of a normalization's parameters (weights,
    biases, running statistics, given in argument order); True where they are float32 beside
    a float16 or bfloat16 input (the kernel then computes in float32, rounded once).

    The first given parameter decides: of another dtype than the input, every given
    parameter must be float32 and the input half precision ("mixed dtype"); of the input's
    dtype, every other one must be too (the kernel reads them in ``read_order`` and names the
    first that is not). A half input with half parameters is not mixed."""
    given = [(name, t) for name, t in params.items() if t is not None]
    if not given:
        return False
    dtype = input.dtype
    if given[0][1].dtype is not dtype:
        for name, t in given:
            if t.dtype is not tw.float32:
                raise RuntimeError(
                    f"{fn}: mixed dtype (CPU): expect parameter to have scalar type of Float; "
                    f"{name} is {t.dtype.name} beside a {dtype.name} input (give the parameters "
                    f"the input's dtype, or float32 ones beside a float16/bfloat16 input)"
                )
        if dtype not in (tw.float16, tw.bfloat16):
            raise RuntimeError(
                f"{fn}: mixed dtype (CPU): all inputs must share same datatype. (float32 "
                f"parameters go only with a float16/bfloat16 input, got {dtype.name}); convert "
                f"them with .to({dtype.name})"
            )
        return True
    for name in read_order:
        t = params[name]
        if t is not None and t.dtype is not dtype:
            raise RuntimeError(
                f"{fn}: expected scalar type {_KERNEL_NAME[dtype.name]} but found "
                f"{_KERNEL_NAME[t.dtype.name]} ({name} is {t.dtype.name} where the input and "
                f"{given[0][0]} are {dtype.name}); give every parameter one dtype"
            )
    return False


def _float(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.float()


def _write_back(stats: tuple[Tensor | None, ...], updated: tuple[Tensor | None, ...]) -> None:
    """Running statistics of a lower precision than float32 take the values their float32
    copies were updated to."""
    with tw.no_grad():
        for s, u in zip(stats, updated):
            if s is not None and s is not u and s.dtype is not tw.float32:
                s.copy_(u)


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    """A per-channel (axis 1) tensor shaped to broadcast against an ``ndim``-D input."""
    return t.reshape(1, -1, *([1] * (ndim - 2)))


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _channel_affine(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """``y`` scaled and shifted per channel (axis 1)."""
    return _affine(
        y,
        None if weight is None else _channel_view(weight, y.dim()),
        None if bias is None else _channel_view(bias, y.dim()),
    )


def _need_running_stats(
    running_mean: Tensor | None, running_var: Tensor | None, fn: str, flag: str
) -> None:
    if running_mean is None or running_var is None:
        raise RuntimeError(
            f"{fn}: running_mean and running_var are needed when {flag}=False; pass them or "
            f"set {flag}=True"
        )


def _with_running_stats(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    eps: float,
    fn: str,
    flag: str,
) -> Tensor:
    """``input`` normalized per channel by the given running statistics."""
    _need_running_stats(running_mean, running_var, fn, flag)
    mean = _channel_view(running_mean, input.dim())
    var = _channel_view(running_var, input.dim())
    return (input - mean) * (var + eps).rsqrt()


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (axis 1) of ``(N, C, ...)`` input. In training it uses the batch
    statistics and moves the running ones toward them in place (the running variance is
    unbiased); otherwise it uses the running ones."""
    # PyTorch's Python checks come first, in its order: the batch size, then eps.
    shape = tuple(input.shape)
    if training and not shape:  # PyTorch's class: its batch-size check reads the size of axis 0
        raise IndexError("batch_norm: expected input of shape (N, C, ...), got a 0-d tensor")
    if training and math.prod(shape[:1] + shape[2:]) == 1:
        raise ValueError(
            f"batch_norm: expected more than 1 value per channel when training, got input "
            f"of shape {shape}"
        )
    if eps < 0 or (training and eps == 0):
        raise ValueError(
            f"batch_norm eps must be {'positive during training' if training else 'non-negative'}"
            f", but got {eps}"
        )
    if input.numel() == 0:
        # PyTorch's: the input as it is, through weight[0] and bias[0] (an IndexError where
        # those are empty), the running statistics left alone, in training or not.
        y = input.clone()
        y = y if weight is None else y * weight[0]
        return y if bias is None else y + bias[0]
    _real_input("batch_norm", input)
    if input.dim() < 2:
        _refuse_channelless(input, running_mean, running_var, weight, bias, training)
    if not training and running_mean is None and running_var is None:
        # PyTorch asks for them before it counts the weight's and bias's elements
        _need_running_stats(running_mean, running_var, "batch_norm", "training")
    mixed = _batch_norm_parameters(
        "batch_norm", input, running_mean, running_var, weight, bias, training
    )
    if not mixed and input.dtype in (tw.float16, tw.bfloat16):
        y = half_norms.batch_norm(
            input, running_mean, running_var, weight, bias, training, momentum, eps
        )
        return labelled(y, "NativeBatchNormBackward0", input, weight, bias)
    if mixed:
        stats = _float(running_mean), _float(running_var)
        y = batch_norm(input.float(), *stats, _float(weight), _float(bias), training, momentum, eps)
        _write_back((running_mean, running_var), stats)
        return labelled(y.to(input.dtype), "NativeBatchNormBackward0", input, weight, bias)
    dims = (0, *range(2, input.dim()))
    count = input.numel() // input.shape[1]
    if training:
        y, mean, var = _standardize(input, dims, eps)
        with tw.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(-1), alpha=momentum)
            if running_var is not None:
                unbiased = var.reshape(-1) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    else:
        y = _with_running_stats(input, running_mean, running_var, eps, "batch_norm", "training")
    # PyTorch's CPU kernel, in training and eval
    y = _channel_affine(y, weight, bias)
    return labelled(y, "NativeBatchNormBackward0", input, weight, bias)


def _refuse_channelless(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    training: bool,
) -> None:
    """PyTorch's errors for a non-empty input without a channel axis, in its order: it counts
    0 channels, so a non-empty parameter is one of the wrong size (running statistics first,
    then the missing ones in eval, then the weight and bias); otherwise reading axis 1 fails
    (an IndexError; a RuntimeError for a 0-d input)."""
    shape = tuple(input.shape)

    def count_channels(params: dict[str, Tensor | None]) -> None:
        for name, t in params.items():
            if t is not None and t.numel() != 0:
                raise RuntimeError(
                    f"batch_norm: {name} should contain 0 elements not {t.numel()} (the input "
                    f"of shape {shape} has no channel axis 1; give it the shape (N, C, ...))"
                )

    count_channels({"running_mean": running_mean, "running_var": running_var})
    if not training:
        _need_running_stats(running_mean, running_var, "batch_norm", "training")
    count_channels({"weight": weight, "bias": bias})
    error = IndexError if shape else RuntimeError
    raise error(f"batch_norm: expected input of shape (N, C, ...), got {shape}")


def _batch_norm_parameters(
    fn: str,
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    training: bool,
) -> bool:
    """PyTorch's checks of batch_norm's input dtype and parameters, in its order; True where
    the parameters are float32 beside a half input (see :func:`_parameter_dtypes`).
    instance_norm is batch_norm on its input seen as one sample of ``N * C`` channels, so it
    takes these checks too (``fn`` names the function called)."""
    if (running_mean is None) != (running_var is None):
        raise ValueError(
            f"{fn}: running_mean and running_var must either both be None or neither be None"
        )
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"{fn}: \"batch_norm\" not implemented for '{_KERNEL_NAME[input.dtype.name]}': its "
            "input must be floating-point; convert it with .float()"
        )
    stats = {"running_mean": running_mean, "running_var": running_var}
    affine = {"weight": weight, "bias": bias}
    channels = input.shape[1]
    for name, t in {**stats, **affine}.items():
        if t is not None and t.numel() != channels:
            raise RuntimeError(
                f"{fn}: {name} should contain {channels} elements not {t.numel()} (one "
                f"per channel of the input of shape {tuple(input.shape)})"
            )
    # the kernel reads the running statistics first in training, the affine map in eval
    read_order = (*stats, *affine) if training else (*affine, *stats)
    return _parameter_dtypes(fn, input, {**affine, **stats}, read_order)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample of ``(N, C, ...)`` input over its spatial axes.
    With ``use_input_stats`` the running statistics (when given) move toward the batch mean
    of the per-sample statistics in place; otherwise they normalize the input."""
    _real_input("instance_norm", input)
    if input.dim() < 2:
        raise ValueError(
            f"instance_norm: expected input of shape (N, C, ...), got {tuple(input.shape)}"
        )
    count = math.prod(input.shape[2:])
    # PyTorch refuses exactly one element: with none the result is just empty
    if use_input_stats and count == 1:
        raise ValueError(
            "instance_norm: expected more than 1 spatial element when training, got input "
            f"of shape {tuple(input.shape)}"
        )
    flag = "use_input_stats"
    if not use_input_stats:  # PyTorch asks for them before any other check of the parameters
        _need_running_stats(running_mean, running_var, "instance_norm", flag)
    # PyTorch's instance_norm converts the running statistics to the weight's dtype (the
    # input's where there is none), so their own dtype never matters; moved ones are copied
    # back into them
    dtype = (input if weight is None else weight).dtype
    given = (running_mean, running_var)
    if any(s is not None and s.dtype is not dtype for s in given):
        stats = tuple(None if s is None else s.to(dtype) for s in given)
        y = instance_norm(input, *stats, weight, bias, use_input_stats, momentum, eps)
        if use_input_stats:
            with tw.no_grad():
                for s, moved in zip(given, stats):
                    if s is not None and s is not moved:
                        s.copy_(moved)
        return y
    mixed = _batch_norm_parameters(
        "instance_norm", input, running_mean, running_var, weight, bias, use_input_stats
    )
    _refuse_affine_without_samples(input, weight, bias)
    if count == 0:  # PyTorch's batch norm leaves the statistics alone: no values to move them
        return labelled(_channel_affine(input, weight, bias), "ViewBackward0", input)
    if not mixed and input.dtype in (tw.float16, tw.bfloat16):
        return half_norms.instance_norm(
            input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
        )
    if mixed:
        stats = _float(running_mean), _float(running_var)
        y = instance_norm(
            input.float(), *stats, _float(weight), _float(bias), use_input_stats, momentum, eps
        )
        _write_back((running_mean, running_var), stats)
        y = y.to(input.dtype)
    elif use_input_stats:
        _move_instance_stats(input, running_mean, running_var, momentum)
        return fused_or_reference(
            "instance_norm", instance_norm_reference, (input, weight, bias), eps
        )
    else:
        y = _with_running_stats(input, running_mean, running_var, eps, "instance_norm", flag)
        y = _viewed_back(_channel_affine(y, weight, bias))
    # PyTorch's batch norm of the input seen as one sample, viewed back
    return labelled(y, "ViewBackward0", input)


def _refuse_affine_without_samples(
    input: Tensor, weight: Tensor | None, bias: Tensor | None
) -> None:
    """PyTorch's ``instance_norm`` fails on its per-sample copy of the affine parameters
    when the batch has no sample."""
    if input.shape[0] == 0 and (weight is not None or bias is not None):
        raise IndexError(
            f"instance_norm: an input of shape {tuple(input.shape)} has no sample to give "
            "the weight and bias to; skip the call for an empty batch"
        )


def _move_instance_stats(
    input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, momentum: float
) -> None:
    """PyTorch's update: each (sample, channel) moves its own copy of the channel's running
    statistics toward its mean and unbiased variance (accumulated in float64, rounded to the
    statistics' dtype), in that dtype with the momentum rounded to it; the running statistics
    take the mean of the copies over the samples (moving the mean of the per-sample
    statistics rounds otherwise)."""
    x = input.double()
    dims = tuple(range(2, x.dim()))
    with tw.no_grad():
        for s, batch in ((running_mean, x.mean), (running_var, x.var)):
            if s is not None:
                take = tw.tensor(momentum, dtype=s.dtype, device=s.device)
                moved = take * batch(dims).to(s.dtype) + (1 - take) * s
                s.copy_(moved.mean(0))


def instance_norm_reference(
    x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float
) -> Tensor:
    """Each (sample, channel) plane of ``x`` standardized over its spatial axes, then scaled
    and shifted per channel where given (the decomposition of the ``instance_norm``
    composite)."""
    y = _standardize(x, tuple(range(2, x.dim())), eps)[0]
    return _viewed_back(_channel_affine(y, weight, bias))


def _viewed_back(y: Tensor) -> Tensor:
    """``y`` (N, C, ...) as PyTorch's instance norm ends: a view of its batch norm's result,
    one sample of N * C channels, so that a hook on that last node (ViewBackward0) sees its
    gradient in that shape."""
    shape = tuple(y.shape)
    return y.reshape(1, shape[0] * shape[1], *shape[2:]).reshape(shape)


def layer_norm_reference(
    x: Tensor, weight: Tensor | None, bias: Tensor | None, normalized_ndim: int, eps: float
) -> Tensor:
    """``x`` standardized over its last ``normalized_ndim`` axes, then scaled by ``weight``
    and shifted by ``bias`` where given (the decomposition of the ``layer_norm`` composite)."""
    y = _standardize(x, tuple(range(x.dim() - normalized_ndim, x.dim())), eps)[0]
    return _affine(y, weight, bias)


def _check_trailing(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None,
    bias: Tensor | None,
    fn: str,
) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or len(shape) > input.dim() or tuple(input.shape[-len(shape) :]) != shape:
        raise RuntimeError(
            f"{fn}: normalized_shape {shape} must be a non-empty suffix of the input shape "
            f"{tuple(input.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"{fn}: {name} of shape {tuple(t.shape)} must have normalized_shape {shape}"
            )
    return shape


def _affine_parameters(
    fn: str, kernel: str, input: Tensor, weight: Tensor | None, bias: Tensor | None
) -> bool:
    """PyTorch's checks of layer_norm's or group_norm's input dtype and parameters; True
    where the parameters are float32 beside a half input (see :func:`_parameter_dtypes`)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"{fn}: \"{kernel}\" not implemented for '{_KERNEL_NAME[input.dtype.name]}': its "
            "input must be floating-point; convert it with .float()"
        )
    dtype = input.dtype
    if (weight is None or weight.dtype is dtype) and (bias is None or bias.dtype is dtype):
        return False  # (the common case: one dtype throughout, nothing to refuse)
    params = {"weight": weight, "bias": bias}
    return _parameter_dtypes(fn, input, params, tuple(params))


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes, then scale and shift
    elementwise."""
    shape = _check_trailing(input, normalized_shape, weight, bias, "layer_norm")
    _real_input("layer_norm", input)
    mixed = _affine_parameters("layer_norm", "LayerNormKernelImpl", input, weight, bias)
    if not mixed and input.dtype in (tw.float16, tw.bfloat16):
        y = half_norms.layer_norm(
            input,
            weight,
            bias,
            len(shape),
            eps,
            lambda: layer_norm(input.float(), shape, _float(weight), _float(bias), eps),
        )
        return labelled(y, "NativeLayerNormBackward0", input)
    if mixed:
        y = layer_norm(input.float(), shape, _float(weight), _float(bias), eps)
        return labelled(y.to(input.dtype), "NativeLayerNormBackward0", input)
    if SAVED_TENSORS_HOOKS and tw.is_grad_enabled():
        # PyTorch's node packs the input, weight, bias and statistics: one node saves them
        y = _LayerNormSaving.apply(input, weight, bias, len(shape), eps)
        return labelled(y, "NativeLayerNormBackward0", input, weight, bias)
    return fused_or_reference(
        "layer_norm", layer_norm_reference, (input, weight, bias), len(shape), eps
    )


class _LayerNormSaving(Function):
    """``layer_norm`` as PyTorch's NativeLayerNormBackward0 under ``saved_tensors_hooks``: it
    saves (packs) the input, the weight and bias where given, then the mean and inverse
    standard deviation, in PyTorch's order, and its backward (tensor ops, which differentiate
    again) reads what unpack gives for each."""

    @staticmethod
    def forward(ctx, x, weight, bias, ndim, eps):  # noqa: ANN001, ANN205
        dims = tuple(range(x.dim() - ndim, x.dim()))
        mean = x.mean(dims, keepdim=True)
        rstd = (x.var(dims, correction=0, keepdim=True) + eps).rsqrt()
        if weight is not None and bias is not None:  # (PyTorch's order, read from its packs)
            ctx.save_for_backward(weight, x, bias, mean, rstd)
        elif weight is not None:
            ctx.save_for_backward(x, weight, mean, rstd)
        else:
            ctx.save_for_backward(*(() if bias is None else (bias,)), x, mean, rstd)
        ctx.dims, ctx.eps = dims, eps
        ctx.weighted, ctx.biased = weight is not None, bias is not None
        return fused_or_reference("layer_norm", layer_norm_reference, (x, weight, bias), ndim, eps)

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:  # noqa: ANN001
        *given, mean, rstd = ctx.saved_tensors
        weight = None
        if ctx.weighted:
            weight, x = (given[0], given[1]) if ctx.biased else (given[1], given[0])
        else:
            x = given[-1]
        dims = ctx.dims
        if tw.is_grad_enabled():  # create_graph: the statistics' values, their derivatives in x
            mean, rstd = _as_of(x, dims, mean, rstd, ctx.eps)
        xhat = (x - mean) * rstd
        gw = g if weight is None else g * weight
        gx = rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, True))
        lead = tuple(range(x.dim() - len(dims)))
        needs = ctx.needs_input_grad
        gweight = _summed(g * xhat, lead) if needs[1] else None
        gbias = _summed(g, lead) if needs[2] else None
        return gx, gweight, gbias, None, None


def _as_of(x: Tensor, dims: tuple, mean: Tensor, rstd: Tensor, eps: float) -> tuple:
    """The saved ``mean`` and ``rstd`` (what unpack gave) differentiable as the statistics
    of ``x``, as PyTorch's double backward differentiates them."""
    m = x.mean(dims, keepdim=True)
    r = (x.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    return m + (mean - m).detach(), r + (rstd - r).detach()


def _summed(t: Tensor, dims: tuple) -> Tensor:
    """``t`` summed over ``dims``; ``t`` itself where there is none (not a sum of all)."""
    return t.sum(dims) if dims else t


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each group of ``num_groups`` channel groups of ``(N, C, ...)`` input, then
    scale and shift per channel."""
    if input.dim() < 2 or num_groups < 1 or input.shape[1] % num_groups:
        raise RuntimeError(
            f"group_norm: expected input of shape (N, C, ...) with C divisible by num_groups="
            f"{num_groups}, got {tuple(input.shape)}"
        )
    spread = input.shape[0] * input.shape[1] // num_groups * math.prod(input.shape[2:])
    if spread == 1:  # PyTorch's check, on N * C / num_groups * (spatial size)
        raise ValueError(
            f"group_norm: expected more than 1 value per channel when training, got input of "
            f"shape {tuple(input.shape)} with num_groups={num_groups}"
        )
    _real_input("group_norm", input)
    mixed = _affine_parameters("group_norm", "GroupNormKernelImpl", input, weight, bias)
    if not mixed and input.dtype in (tw.float16, tw.bfloat16):
        y = half_norms.group_norm(
            input,
            num_groups,
            weight,
            bias,
            eps,
            lambda: group_norm(input.float(), num_groups, _float(weight), _float(bias), eps),
        )
    elif mixed:
        y = group_norm(input.float(), num_groups, _float(weight), _float(bias), eps)
        y = y.to(input.dtype)
    else:
        # the group's size spelled out: ``-1`` cannot be inferred for an empty batch (N=0)
        size = input.shape[1] // num_groups * math.prod(input.shape[2:])
        grouped = input.reshape(input.shape[0], num_groups, size)
        y = _standardize(grouped, (2,), eps)[0].reshape(input.shape)
        y = _channel_affine(y, weight, bias)
    if input.dim() in (4, 5):  # (torch's native_group_norm keeps a channels-last layout)
        y = kernel_layout(y, input)
    return labelled(y, "NativeGroupNormBackward0", input, weight, bias)


def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``input / sqrt(mean(input ** 2) + eps)`` over the trailing ``normalized_shape`` axes,
    times ``weight``, in the input's dtype; ``eps`` defaults to the machine epsilon of the dtype
    it computes in (float32 for a float16 or bfloat16 input). As PyTorch 2.13: a half input is
    computed in float32, the product with the weight in the dtype both promote to (float64
    for a float64 weight), and the result rounded once to the input's dtype, whatever the
    weight's."""
    shape = _check_trailing(input, normalized_shape, weight, None, "rms_norm")
    if eps is None:
        eps = _EPS[input.dtype.name]
    work = input.float() if input.dtype in (tw.float16, tw.bfloat16) else input
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    y = _affine(work * ((work * work).mean(dims, keepdim=True) + eps).rsqrt(), weight, None)
    return y if y.dtype is input.dtype else y.to(input.dtype)


def _real_input(op: str, input: Tensor) -> None:
    """PyTorch's NotImplementedError for a complex input (its kernels have no complex
    form; the formulas here would compute a result of no defined meaning)."""
    if input.dtype.kind != "c":
        return  # (without building the message on every call)
    refuse_complex(
        op,
        f"not implemented for {input.dtype.name} (as in PyTorch); normalize "
        "torch.view_as_real(x), or x.real and x.imag, instead",
        input,
    )
