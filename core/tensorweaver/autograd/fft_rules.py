"""Gradient rules of the fft primitives (API 2.4), merged into
:data:`tensorweaver.autograd.gradients.GRADIENTS` and written by that module's conventions
(a rule takes the node and its output's gradient, returns one gradient per input; complex
gradients are conjugate-Wirtinger, dL/dx + i dL/dy for a real loss L).

Each primitive is linear, so its gradient is its adjoint applied to the output's gradient,
as PyTorch's ``FunctionsManual.cpp`` writes it: c2c's is c2c in the other direction with
the same scale; r2c's is the inverse c2c of the gradient zero-padded to the full spectrum,
its real part; c2r's is r2c of the gradient with the bins that stand for two (a bin and its
mirror image, all but bin 0 and an even size's bin n // 2) doubled. The rules are the
primitives again, so they differentiate again (double backward).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver.fft import primitives as p
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.complex import real
from tensorweaver.tensor import Tensor


def _c2c(node: Any, g: Tensor) -> tuple:
    dims, norm, forward = node.saved
    return (p.c2c(g, dims, norm, not forward),)


def _r2c(node: Any, g: Tensor) -> tuple:
    dims, norm, onesided = node.saved
    if onesided:
        last = dims[-1]
        widths = [(0, 0)] * g.ndim
        widths[last] = (0, node.inputs[0].shape[last] - g.shape[last])
        g = mv.pad_dims(g, widths)
    return (real(p.c2c(g, dims, norm, False)),)


def _c2r(node: Any, g: Tensor) -> tuple:
    dims, norm, last_dim_size = node.saved
    grad = p.r2c(g, dims, norm, True)
    last = dims[-1]
    bins = grad.shape[last]
    doubled = last_dim_size - bins  # bins 1..doubled have a mirror image
    if doubled <= 0:
        return (grad,)
    return (ew.mul(grad, _weight(g.backend, g.dtype, grad.ndim, last, bins, doubled)),)


#: c2r's bin weights by (backend, dtype, ndim, dim, bins, doubled): a constant that took a
#: host array and a copy to the device on every backward.
_WEIGHTS: dict[tuple, Tensor] = {}


def _weight(backend: Any, dtype: Any, ndim: int, last: int, bins: int, doubled: int) -> Tensor:
    """1 for each bin along ``last``, 2 for bins 1..doubled, broadcastable over ``ndim``."""
    key = (backend, dtype, ndim, last, bins, doubled)
    weight = _WEIGHTS.get(key)
    if weight is None:
        weights = np.ones([bins if i == last else 1 for i in range(ndim)])
        weights[(slice(None),) * last + (slice(1, 1 + doubled),)] = 2
        native = backend.from_host(weights.astype(dtype.numpy_name), dtype)
        if len(_WEIGHTS) >= 64:  # ever new sizes: start afresh rather than grow
            _WEIGHTS.clear()
        weight = _WEIGHTS[key] = Tensor(native, backend, dtype)
    return weight


FFT_GRADIENTS = {"fft_c2c": _c2c, "fft_r2c": _r2c, "fft_c2r": _c2r}
