"""Error inputs of PyTorch's op database (and their neighbours) that ``tw.nn.functional`` got
wrong: each row failed before its fix (a NumPy error leaked, or no error at all) and now
raises torch's class, run on torch and on tw with the same arguments."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor.tensor_reference import raises_like_torch


def F(m: Any) -> Any:
    return m.nn.functional


MIXED_CONV = {
    # Before: UFuncTypeError from NumPy (conv1d, conv2d) or no error (conv3d) for a complex
    # bias of a real convolution; torch: RuntimeError "... should be the same".
    "conv1d complex bias": lambda m: F(m).conv1d(
        m.ones(1, 1, 4, dtype=m.float64),
        m.ones(1, 1, 2, dtype=m.float64),
        m.ones(1, dtype=m.complex128),
    ),
    "conv2d complex bias": lambda m: F(m).conv2d(
        m.ones(1, 1, 4, 4, dtype=m.float64),
        m.ones(1, 1, 2, 2, dtype=m.float64),
        m.ones(1, dtype=m.complex128),
    ),
    "conv3d complex bias": lambda m: F(m).conv3d(
        m.ones(1, 1, 4, 4, 4, dtype=m.float64),
        m.ones(1, 1, 2, 2, 2, dtype=m.float64),
        m.ones(1, dtype=m.complex128),
    ),
    "conv2d complex input real weight": lambda m: F(m).conv2d(
        m.ones(1, 1, 4, 4, dtype=m.complex128), m.ones(1, 1, 2, 2, dtype=m.float64)
    ),
    "conv2d real input complex weight": lambda m: F(m).conv2d(
        m.ones(1, 1, 4, 4, dtype=m.float64), m.ones(1, 1, 2, 2, dtype=m.complex128)
    ),
}

EMPTY_POOL = {
    # Before: tw pooled an empty channel or spatial axis (or an empty unbatched input);
    # torch allows an empty batch only (RuntimeError).
    "max_pool1d unbatched empty channels": lambda m: F(m).max_pool1d(m.ones(0, 10), 1),
    "max_pool1d empty channels": lambda m: F(m).max_pool1d(m.ones(1, 0, 10), 1),
    "max_pool1d empty length": lambda m: F(m).max_pool1d(m.ones(1, 10, 0), 1),
    "max_pool1d indices unbatched empty": lambda m: F(m).max_pool1d(
        m.ones(0, 10), 1, return_indices=True
    ),
    "max_pool2d unbatched empty channels": lambda m: F(m).max_pool2d(m.ones(0, 1, 10), 1),
    "max_pool3d unbatched empty channels": lambda m: F(m).max_pool3d(m.ones(0, 1, 2, 10), 1),
    "max_pool3d empty channels": lambda m: F(m).max_pool3d(m.ones(1, 0, 2, 2, 10), 1),
    "avg_pool1d unbatched empty channels": lambda m: F(m).avg_pool1d(m.ones(0, 10), 1),
    "avg_pool2d empty channels": lambda m: F(m).avg_pool2d(m.ones(2, 0, 3, 3), 1),
    "avg_pool3d unbatched empty channels": lambda m: F(m).avg_pool3d(m.ones(0, 1, 2, 10), 1),
    "lp_pool2d empty channels": lambda m: F(m).lp_pool2d(m.ones(1, 0, 10, 3), 2, 1),
}


MIXED_LINEAR = {
    # Before: tw promoted the bias (a float64 result); torch's addmm refuses a bias of
    # another dtype (RuntimeError "... must have the same dtype").
    "linear 2-d float64 input float32 bias": lambda m: F(m).linear(
        m.ones(2, 3, dtype=m.float64), m.ones(4, 3, dtype=m.float64), m.ones(4)
    ),
    "linear 3-d float32 input float64 bias": lambda m: F(m).linear(
        m.ones(2, 2, 3), m.ones(4, 3), m.ones(4, dtype=m.float64)
    ),
    "linear 1-d input float16 bias": lambda m: F(m).linear(
        m.ones(3), m.ones(4, 3), m.ones(4, dtype=m.float16)
    ),
    "linear complex input float64 bias": lambda m: F(m).linear(
        m.ones(2, 3, dtype=m.complex128),
        m.ones(4, 3, dtype=m.complex128),
        m.ones(4, dtype=m.float64),
    ),
    "linear 2-d input 0-d bias of another dtype": lambda m: F(m).linear(
        m.ones(2, 3, dtype=m.float64), m.ones(4, 3, dtype=m.float64), m.tensor(1.0)
    ),
    "linear 4-d input bias (1, 4) of another dtype": lambda m: F(m).linear(
        m.ones(2, 2, 2, 3, dtype=m.float64), m.ones(4, 3, dtype=m.float64), m.ones(1, 4)
    ),
}

# Where torch adds the bias after the product (an add, which promotes): tw still does.
PROMOTED_LINEAR = {
    "0-d bias, 3-d input": lambda m: F(m).linear(
        m.ones(2, 2, 3, dtype=m.float64), m.ones(4, 3, dtype=m.float64), m.tensor(2.0)
    ),
    "1-d bias, non-contiguous 3-d input": lambda m: F(m).linear(
        m.ones(3, 2, 3, dtype=m.float64).transpose(0, 1), m.ones(4, 3, dtype=m.float64), m.ones(4)
    ),
}


@pytest.mark.parametrize("call", list(MIXED_LINEAR.values()), ids=list(MIXED_LINEAR))
def test_linear_bias_of_another_dtype_raises_like_torch(backend: str, call: Callable) -> None:
    raises_like_torch(call, match=["linear", "same dtype"])


@pytest.mark.parametrize("call", list(PROMOTED_LINEAR.values()), ids=list(PROMOTED_LINEAR))
def test_linear_bias_added_after_promotes_like_torch(backend: str, call: Callable) -> None:
    theirs, ours = call(torch), call(tw)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "tensorweaver")
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call", list(MIXED_CONV.values()), ids=list(MIXED_CONV))
def test_conv_mixed_real_complex_raises_like_torch(backend: str, call: Callable) -> None:
    raises_like_torch(call, match=["conv", "complex128|float64"])


@pytest.mark.parametrize("call", list(EMPTY_POOL.values()), ids=list(EMPTY_POOL))
def test_pool_empty_non_batch_axis_raises_like_torch(backend: str, call: Callable) -> None:
    raises_like_torch(call, match=["pool", "positive length"])


@pytest.mark.parametrize("shape", [(0, 1, 10), (0, 2, 3, 3)])
def test_pool_empty_batch_still_pools_like_torch(backend: str, shape: tuple) -> None:
    """The check above leaves an empty batch alone: torch pools it to an empty output."""
    nd = len(shape) - 2
    theirs = getattr(torch.nn.functional, f"max_pool{nd}d")(torch.ones(shape), 1)
    ours = getattr(tw.nn.functional, f"max_pool{nd}d")(tw.ones(shape), 1)
    assert tuple(ours.shape) == tuple(theirs.shape)
