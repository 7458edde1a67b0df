"""Parameter initialisation (``tw.nn.init``), with PyTorch's names, formulas and defaults.

Every function fills its tensor in place without recording gradients and returns it. Random
draws use the tensor's device's generator (``tw.manual_seed`` makes them reproducible), or
``generator`` when one is given (see :mod:`tensorweaver.random`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.ops import sampling
from tensorweaver.random import Generator
from tensorweaver.tensor import Tensor

_LINEAR_GAINS = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def calculate_gain(nonlinearity: str, param: Optional[Union[int, float]] = None) -> float:
    """The recommended gain for ``nonlinearity`` (``param`` is leaky_relu's negative slope)."""
    if nonlinearity in _LINEAR_GAINS:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight shaped ``(out, in, *kernel)``."""
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {tuple(tensor.shape)})"
        )
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """Fill with draws from U(a, b)."""
    with tw.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """Fill with draws from N(mean, std²)."""
    with tw.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with tw.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    with tw.no_grad():
        return tensor.zero_()


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    with tw.no_grad():
        return tensor.fill_(1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the main diagonal)."""
    if tensor.dim() != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported, got {tensor.dim()}")
    with tw.no_grad():
        return tensor.copy_(tw.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta: each of the first
    ``min(out_channels // groups, in_channels)`` output channels of a group passes its input
    channel through unchanged (a one at the kernel's centre), zeros elsewhere."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = tensor.shape[0] // groups
    centre = tuple(n // 2 for n in tensor.shape[2:])
    values = np.zeros(tuple(tensor.shape))
    for g in range(groups):
        for d in range(min(per_group, tensor.shape[1])):
            values[(g * per_group + d, d, *centre)] = 1
    with tw.no_grad():
        return tensor.copy_(tw.tensor(values, dtype=tensor.dtype, device=tensor.device))


def sparse_(
    tensor: Tensor, sparsity: float, std: float = 0.01, generator: Optional[Generator] = None
) -> Tensor:
    """Fill a 2-d tensor from N(0, ``std``²), then zero ``ceil(sparsity * rows)`` randomly
    chosen rows of each column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    with tw.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            picked = tw.randperm(rows, generator=generator, device=tensor.device)[:zeros]
            tensor[picked, col] = 0
    return tensor


def xavier_uniform_(
    tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """Glorot uniform: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(
    tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """Glorot normal: N(0, std²) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Optional[Generator] = None,
) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan) (``a`` is leaky_relu's slope)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Optional[Generator] = None,
) -> Tensor:
    """He normal: N(0, std²) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def _log_density(x: Tensor, mean: float, std: float, log_peak: float) -> Tensor:
    """log of the normal density at ``x`` relative to its peak on [a, b] (at most 0)."""
    return ((x - mean) / std) ** 2 * -0.5 - log_peak


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Optional[Generator] = None,
) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b] (absolute bounds, not in units of std).

    By rejection, as PyTorch 2.13 does (so the same seed gives the same values on a backend
    with PyTorch's stream): normal draws redrawn where outside [a, b] when at least 30% of
    the mass lies inside, else uniform proposals on [a, b] accepted with probability
    density / peak density (``uniform_`` refuses a > b, as PyTorch's)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    # PyTorch draws into a view in the order of its memory: sample in that order.
    order = sampling.memory_order(tensor)
    shape = tuple(tensor.shape) if order is None else tuple(tensor.shape[d] for d in order)
    with tw.no_grad():
        result = _truncated_normal(tensor, shape, mean, std, a, b, generator)
        return tensor.copy_(sampling.in_memory_order(tensor, result, order))


def _truncated_normal(
    like: Tensor,
    shape: tuple,
    mean: float,
    std: float,
    a: float,
    b: float,
    generator: Optional[Generator],
) -> Tensor:
    """``trunc_normal_``'s samples, of ``shape`` and ``like``'s dtype and device."""

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    def fresh() -> Tensor:
        return like.new_empty(shape)

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        # The bounds as the tensor's dtype rounds them, so that kept values lie inside.
        low, high = tw.tensor([a, b], dtype=like.dtype, device=like.device).tolist()
        result = fresh().normal_(mean, std, generator=generator)
        while True:
            outside = (result < low) | (result > high)
            if not bool(outside.any()):
                return result
            redrawn = fresh().normal_(mean, std, generator=generator)
            result = tw.where(outside, redrawn, result)
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
    result = fresh().uniform_(a, b, generator=generator)
    pending = fresh().uniform_(generator=generator).log() > _log_density(
        result, mean, std, log_peak
    )
    while bool(pending.any()):
        proposals = fresh().uniform_(a, b, generator=generator)
        result = tw.where(pending, proposals, result)
        rejected = fresh().uniform_(generator=generator).log() > _log_density(
            proposals, mean, std, log_peak
        )
        pending = pending & rejected
    return result


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix, the tensor viewed as ``(shape[0], -1)``.

    The QR factorisation of a Gaussian matrix runs on the host with NumPy: initialisation is
    not on the compute path, and every backend then receives the same values."""
    if tensor.dim() < 2:
        raise ValueError("orthogonal_: only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with tw.no_grad():
        # drawn by normal_ in the tensor's dtype as PyTorch's is: the same stream (and
        # NotImplementedError for integer tensors); factorised in float64
        gaussian = tensor.new_empty((rows, cols)).normal_(generator=generator)
        flat = np.asarray(gaussian, dtype=np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    # Fix the sign ambiguity of QR so that q is uniformly distributed (Haar measure).
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = tw.tensor(gain * q, dtype=tensor.dtype, device=tensor.device)
    with tw.no_grad():
        return tensor.copy_(values.reshape(tuple(tensor.shape)))


def _deprecated(init: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's old spelling of ``init`` (without the trailing underscore), which warns."""
    new_name = init.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
            FutureWarning,
            stacklevel=2,
        )
        return init(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated: use ``{new_name}``."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
