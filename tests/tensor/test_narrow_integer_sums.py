"""Sums and products of narrow integers that keep their dtype (``dtype=`` given, or the core's
own: tensordot sums a contracted dimension that meets one of size 1): the backend's result
must be of that dtype. torch:cpu returned int64 under an int32 tensor, so the next product
raised "expected m1 and m2 to have the same dtype"."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

NARROW = ("int8", "uint8", "int16", "int32")
pytestmark = pytest.mark.cunumeric  # its sums over several axes were the wrong ones


@pytest.mark.parametrize("name", NARROW)
@pytest.mark.parametrize("reduction", ("sum", "prod"))
def test_reduction_keeps_the_dtype_it_was_given(backend, reduction, name):
    a = np.random.default_rng(0).integers(0, 4, (2, 3, 4)).astype(name)
    dtype = getattr(tw, name)
    got = getattr(tw, reduction)(tw.tensor(a), 1, dtype=dtype)
    want = getattr(torch, reduction)(torch.from_numpy(a), 1, dtype=getattr(torch, name))
    assert got.dtype is dtype
    assert np.asarray(got.numpy()).dtype == np.dtype(name)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", NARROW)
def test_sum_over_several_axes_keeps_the_dtype_it_was_given(backend, name):
    a = np.random.default_rng(2).integers(0, 9, (2, 3, 4)).astype(name)
    dtype = getattr(tw, name)
    got = tw.sum(tw.tensor(a), (0, 2), dtype=dtype)
    want = torch.sum(torch.from_numpy(a), (0, 2), dtype=getattr(torch, name))
    assert got.dtype is dtype
    assert np.asarray(got.numpy()).dtype == np.dtype(name)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", NARROW)
def test_tensordot_over_a_dimension_of_size_one(backend, name):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, (1, 1, 1)).astype(name)
    b = rng.integers(0, 3, (2, 1, 2)).astype(name)
    got = tw.tensordot(tw.tensor(a), tw.tensor(b), dims=([0, 1], [2, 0]))
    want = torch.tensordot(torch.from_numpy(a), torch.from_numpy(b), dims=([0, 1], [2, 0]))
    assert got.dtype is getattr(tw, name)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
