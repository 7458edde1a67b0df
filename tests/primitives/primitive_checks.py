"""Reference helpers for the shared primitive suite.

Inputs are built on the host at the dtype under test, moved to the backend with
``from_host``, and results come back with ``to_host``; expectations are NumPy float64 (or
exact integer) results computed from the same host values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

FLOATS = (d.float16, d.float32, d.float64)
SIGNED = (d.int8, d.int16, d.int32, d.int64)
INTS = (d.uint8, *SIGNED)
NUMERIC = INTS + FLOATS
ALL = (d.bool_, *NUMERIC)

#: Relative tolerance per float dtype: a few ulp, and 1e-12 for float64.
RTOL = {d.float16: 2e-3, d.float32: 2e-6, d.float64: 1e-12}

#: The IR wants IEEE results without warnings: NumPy's floating-point warnings fail a test.
NO_FP_WARNINGS = pytest.mark.filterwarnings("error:.*encountered in:RuntimeWarning")

nan, inf = float("nan"), float("inf")

# Standard operands, shape (3, 4). The float pairs cover 0 * inf, inf - inf, x / 0, 0 / 0,
# NaN, signed zeros and a half for round-half-to-even; the int pairs every sign combination
# with nonzero divisors and results (a + b, a - b, a * b, a // b, a % b) that fit int8.
FLOAT_A = [[0.0, -0.0, 1.5, -2.5], [0.5, 3.0, nan, inf], [-inf, 1e-3, 7.0, -0.75]]
FLOAT_B = [[inf, -1.0, 0.0, -0.0], [2.0, -3.5, 1.0, -inf], [2.5, nan, -2.0, 0.3]]
SIGNED_A = [[-4, -3, -2, -1], [0, 1, 2, 3], [4, -4, 3, -1]]
SIGNED_B = [[3, -3, 2, -2], [1, -1, 3, 2], [-3, 3, -2, -1]]
UINT_A = [[1, 2, 3, 4], [5, 6, 6, 2], [3, 4, 5, 6]]
UINT_B = [[1, 1, 2, 3], [4, 5, 6, 1], [1, 2, 3, 4]]  # b <= a, so a - b stays in range
BOOL_A = [[True, False, True, False], [True, True, False, False], [False, True, False, True]]
BOOL_B = [[True, True, False, False], [False, True, False, True], [True, False, True, False]]
#: Non-negative integer exponents: with the A operands above, powers fit int8 and uint8.
EXPONENTS = [[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]]


def np_dtype(dtype: DType) -> np.dtype:
    return np.dtype(dtype.numpy_name)


def host(values: Any, dtype: DType) -> np.ndarray:
    """``values`` as a host array of ``dtype`` (how the test sees the backend's input)."""
    with np.errstate(all="ignore"):
        return np.asarray(values).astype(np_dtype(dtype))


def operands(dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    """The standard (a, b) host pair for ``dtype``."""
    if dtype is d.bool_:
        pair = BOOL_A, BOOL_B
    elif dtype is d.uint8:
        pair = UINT_A, UINT_B
    elif dtype in SIGNED:
        pair = SIGNED_A, SIGNED_B
    else:
        pair = FLOAT_A, FLOAT_B
    return host(pair[0], dtype), host(pair[1], dtype)


class Standard:
    """The standard operands on one backend, moved there once per session.

    Moving data in is a backend's slowest call (milliseconds on cuPyNumeric), and primitives
    never modify their inputs, so tests share these arrays.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self._moved: dict[tuple[str, str], Any] = {}

    def get(self, dtype: DType, which: str) -> tuple[np.ndarray, Any]:
        """Operand ``which`` ("a", "b" or "exponents") of ``dtype``: host values, backend array."""
        a, b = operands(dtype)
        values = {"a": a, "b": b, "exponents": host(EXPONENTS, dtype)}[which]
        key = (dtype.name, which)
        if key not in self._moved:
            self._moved[key] = put(self.backend, values, dtype)
        return values, self._moved[key]


def require(backend: Any, *dtypes: DType) -> None:
    missing = [t.name for t in dtypes if t not in backend.dtypes]
    if missing:
        pytest.skip(f"backend does not support {', '.join(missing)}")


def put(backend: Any, values: Any, dtype: DType) -> Any:
    """``values`` on ``backend`` as ``dtype`` (the test skips if the backend lacks it)."""
    require(backend, dtype)
    return backend.from_host(host(values, dtype), dtype)


def fetch(backend: Any, a: Any, dtype: DType, what: str = "") -> np.ndarray:
    """``a`` on the host, after checking that it has exactly ``dtype``."""
    got = backend.to_host(a)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == np_dtype(dtype), f"{what} result dtype {got.dtype}, expected {dtype.name}"
    return got


def check(
    backend: Any,
    result: Any,
    expected: Any,
    dtype: DType,
    rtol: float | None = None,
    atol: float = 0.0,
    what: str = "",
) -> None:
    """``result`` has ``dtype``, ``expected``'s shape and, within tolerance, its values.

    For float dtypes ``expected`` (float64) is first rounded to ``dtype``, so overflow to inf
    is expected where the dtype overflows; NaN must meet NaN and inf the same inf. ``what``
    names the result in failure messages.
    """
    got = fetch(backend, result, dtype, what)
    with np.errstate(all="ignore"):
        want = np.asarray(expected).astype(np_dtype(dtype))
    assert got.shape == want.shape, f"{what} shape {got.shape}, expected {want.shape}"
    if dtype in FLOATS:
        np.testing.assert_allclose(
            got.astype(np.float64),
            want.astype(np.float64),
            rtol=RTOL[dtype] if rtol is None else rtol,
            atol=atol,
            equal_nan=True,
            err_msg=what,
        )
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def exact(a: np.ndarray) -> np.ndarray:
    """``a`` widened for a reference computation: floats to float64, ints to int64."""
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a.astype(np.int64) if a.dtype.kind in "iu" else a


def quiet_ref(fn: Any, *args: Any) -> np.ndarray:
    """A NumPy reference result, computed without floating-point warnings."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))
