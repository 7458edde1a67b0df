"""Parameter initialisation (``tw.nn.init``), with PyTorch's names, formulas and defaults.

Every function fills its tensor in place without recording gradients and returns it. Random
draws use the tensor's device's generator (``tw.manual_seed`` makes them reproducible), or
``generator`` when one is given (see :mod:`tensorweaver.random`).
"""

from __future__ import annotations

import math
from typing import Optional, Union

import numpy as np

import tensorweaver as tw
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
        return 1.0
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
    with tw.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    with tw.no_grad():
        return tensor.zero_()


def ones_(tensor: Tensor) -> Tensor:
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
            picked = tw.randperm(rows, generator=generator)[:zeros]
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
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def _erfinv(y: Tensor) -> Tensor:
    """Inverse error function for |y| < 1: a closed-form first guess (relative error about
    2e-3) polished by Newton steps on ``erf``, which converge quadratically."""
    a = 0.147
    log_term = tw.log(1.0 - y * y)
    first = 2.0 / (math.pi * a) + log_term / 2.0
    x = tw.sign(y) * tw.sqrt(tw.sqrt(first * first - log_term / a) - first)
    for _ in range(3):
        x = x - (tw.erf(x) - y) / (2.0 / math.sqrt(math.pi) * tw.exp(-x * x))
    return x


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Optional[Generator] = None,
) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b] (absolute bounds, not in units of std),
    by inverting the normal CDF on uniform draws between the bounds' CDF values."""
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = cdf((a - mean) / std), cdf((b - mean) / std)
    with tw.no_grad():
        u = tw.empty(tensor.shape, dtype=tw.float64, device=tensor.device)
        u.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        # Keep strictly inside (-1, 1): erfinv(±1) is infinite.
        eps = 1e-15
        u = tw.clamp(u, min=-1.0 + eps, max=1.0 - eps)
        x = _erfinv(u) * (std * math.sqrt(2.0)) + mean
        return tensor.copy_(tw.clamp(x, min=a, max=b).to(tensor.dtype))


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
        # drawn by normal_ as PyTorch's is (not tw.randn): the same stream position after it
        gaussian = tensor.new_empty((rows, cols), dtype=tw.float64).normal_(generator=generator)
        flat = np.asarray(gaussian)
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
