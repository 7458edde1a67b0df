"""Dropout: ``dropout`` zeroes elements, ``dropout1d/2d/3d`` whole channels;
``alpha_dropout`` and ``feature_alpha_dropout`` keep SELU's zero mean and unit variance.

The keep-mask is drawn with ``tw.rand`` on the input's device; kept values are scaled by
``1 / (1 - p)`` so that the expectation is unchanged.
"""

from __future__ import annotations

import warnings

import tensorweaver as tw
from tensorweaver.nn.functional.activation import _apply
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.tensor import Tensor


def _check_p(p: float, fn: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}: dropout probability has to be between 0 and 1, but got {p}")


def _masked(
    input: Tensor, p: float, training: bool, inplace: bool, mask_shape: tuple, fn: str
) -> Tensor:
    _check_p(p, fn)
    if not training or p == 0:
        return input
    if p == 1:
        return _apply(lambda x: x * 0, input, inplace)
    if mask_shape == tuple(input.shape):
        return _apply(
            lambda x: fused_or_reference("dropout", dropout_reference, (x,), p), input, inplace
        )
    return _apply(lambda x: x * _keep_scale(x, p, mask_shape), input, inplace)


def _keep(x: Tensor, p: float, mask_shape: tuple) -> Tensor:
    """1 where an element is kept (probability 1 - p), 0 where dropped, in x's dtype."""
    return (tw.rand(mask_shape, dtype=x.dtype, device=x.device) >= p).to(x.dtype)


def _keep_scale(x: Tensor, p: float, mask_shape: tuple) -> Tensor:
    """1 / (1 - p) where an element is kept, 0 where dropped, drawn on x's device."""
    return _keep(x, p, mask_shape) / (1 - p)


def dropout_reference(x: Tensor, p: float) -> Tensor:
    """The decomposition of the ``dropout`` composite (0 < p < 1, training)."""
    return x * _keep_scale(x, p, tuple(x.shape))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` (when ``training``) and scale the rest by
    ``1 / (1 - p)``."""
    return _masked(input, p, training, inplace, tuple(input.shape), "dropout")


def _feature_dropout(
    input: Tensor, p: float, training: bool, inplace: bool, spatial: int, fn: str
) -> Tensor:
    """Dropout of whole channels of ``(N, C, *spatial)`` or unbatched ``(C, *spatial)`` input."""
    ndim = input.dim()
    if ndim == spatial + 2:
        channel_axes = 2
    elif ndim == spatial + 1:
        channel_axes = 1
        if spatial == 2:
            # PyTorch reads a 3-D input to dropout2d as batched (N, C, L).
            warnings.warn(
                "dropout2d: received a 3-D input; it is treated as (N, C, L), as PyTorch does. "
                "Use dropout1d for (N, C, L) input.",
                stacklevel=3,
            )
            channel_axes = 2
    else:
        raise RuntimeError(
            f"{fn}: expected a {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, "
            f"got shape {tuple(input.shape)}"
        )
    mask_shape = tuple(input.shape[:channel_axes]) + (1,) * (ndim - channel_axes)
    return _masked(input, p, training, inplace, mask_shape, fn)


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` or ``(C, H, W)`` input with probability ``p``."""
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability
    ``p``."""
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


#: -SELU's scale * alpha: the value SELU tends to at -inf, which alpha dropout drops to.
_ALPHA = 1.7580993408473766


def _alpha_masked(
    input: Tensor, p: float, training: bool, inplace: bool, mask_shape: tuple, fn: str
) -> Tensor:
    """Dropped elements set to SELU's saturation value, then an affine map that restores the
    input's mean and variance, as PyTorch computes it."""
    _check_p(p, fn)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _apply(lambda x: x * 0, input, inplace)
    a = 1.0 / ((_ALPHA * _ALPHA * p + 1) * (1 - p)) ** 0.5

    def drop(x: Tensor) -> Tensor:
        keep = _keep(x, p, mask_shape)
        return x * (keep * a) + ((keep - 1) * (_ALPHA * a) + _ALPHA * a * p)

    return _apply(drop, input, inplace)


def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Alpha dropout of each element (when ``training``): for SELU networks."""
    return _alpha_masked(input, p, training, inplace, tuple(input.shape), "alpha_dropout")


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Alpha dropout of whole channels (axis 1) of ``(N, C, ...)`` input."""
    fn = "feature_alpha_dropout"
    # PyTorch checks the rank only where it draws a mask: training with 0 < p < 1.
    if input.dim() < 2 and training and 0 < p < 1 and input.numel() > 0:
        raise RuntimeError(
            f"{fn}: feature dropout requires at least 2 dimensions in the input, got shape "
            f"{tuple(input.shape)}"
        )
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _alpha_masked(input, p, training, inplace, mask_shape, fn)
