"""Max pooling's gradient where a window holds its maximum more than once (PyTorch gives it to
the first, row-major), for channels-last inputs whose windows do not tile the input.

The NumPy backend's scan of ties masked a copy of its hits when the windows (views of a
channels-last input) compared into a channels-last array: every tied element got the
gradient. It showed in a port (M5 on speech commands, a relu's zeros tied in a
``MaxPool1d(4)`` after a channels-last ``Conv1d``)."""

from __future__ import annotations

import numpy as np
import pytest
from snippet_outcomes import same

# small integers: many ties in every window
_VALUES = np.random.default_rng(7).integers(0, 3, size=(2, 3, 34, 5)).astype(np.float64)


def _pooled_gradient(lib, nd: int, layout: str, kernel: int, stride: int | None, padding: int):
    data = _VALUES[..., 0] if nd == 1 else _VALUES
    if layout == "channels_last":  # (N, C, *S) whose channels are innermost in memory
        order = (0, *range(2, data.ndim), 1)
        x = lib.tensor(np.ascontiguousarray(data.transpose(order)))
        x = x.permute(0, data.ndim - 1, *range(1, data.ndim - 1))
    else:
        x = lib.tensor(data)
    x.requires_grad_()
    relu = lib.relu(x - 1)
    relu.retain_grad()
    pool = lib.nn.functional.max_pool1d if nd == 1 else lib.nn.functional.max_pool2d
    out = pool(relu, kernel, stride, padding)
    weights = lib.arange(out.numel(), dtype=lib.float64).reshape(out.shape) + 1
    (out * weights).sum().backward()
    return x.grad, relu.grad


@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("geometry", [(4, None, 0), (3, 2, 1), (2, None, 0)])
def test_tied_maximum_gets_the_gradient_once(backend, nd, layout, geometry):
    same(lambda lib: _pooled_gradient(lib, nd, layout, *geometry), backend)
