"""The NumPy backend's own code paths that the shared primitive suite's small arrays miss."""

from __future__ import annotations

import numpy as np
import pytest
from tensorweaver import registry


@pytest.fixture(scope="module")
def backend():
    return registry.backend_object("numpy")


@pytest.mark.parametrize(
    "dtype", ["float16", "float32", "float64", "int8", "int64", "bool", "complex64", "complex128"]
)
def test_where_on_a_large_random_mask_is_bit_exact(backend, dtype):
    # Past a few thousand elements the backend selects bit patterns instead of np.where, and
    # multiplies a's bits by the mask where the other branch is a 0-d zero (not -0.0).
    rng = np.random.default_rng(0)
    cond = rng.random((64, 128)) > 0.5
    a = (rng.standard_normal((64, 128)) * 100).astype(dtype)
    b = (rng.standard_normal((64, 128)) * 100).astype(dtype)
    if a.dtype.kind == "f":
        a[0, :4] = [np.nan, np.inf, -0.0, -np.inf]
    zero = np.zeros((), dtype)
    negative_zero = zero if dtype == "bool" else -zero
    for other in (b, b.T.copy().T, zero, negative_zero):  # full, non-contiguous, 0-d
        got = backend.where(cond, a, other)
        want = np.where(cond, a, other)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
