"""``repr`` and ``str`` print like PyTorch's: same layout, precision, scientific notation,
summarisation and suffixes. Dtypes print as TensorWeaver's (``dtype=tw.float64`` where
PyTorch prints ``dtype=torch.float64``), and a tensor not on NumPy names its device after
the data, where PyTorch puts ``device='cuda:0'``."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import make

# name: (values, dtype or None for the inferred one, requires_grad)
CASES = {
    "leaf-requiring-grad": ([[1.0, 2.0]], None, True),
    "floats": ([1.5, -2.25, 3.0], None, False),
    "0d-float": (3.5, None, False),
    "0d-requiring-grad": (2.0, None, True),
    "0d-int": (7, None, False),
    "ints": ([1, 2, 3], None, False),
    "wide-ints": ([[1, -1000000], [20, 3]], None, False),
    "bools": ([True, False], None, False),
    "empty": ([], None, False),
    "empty-2d": (np.zeros((0, 3)), "float32", False),
    "float64": ([1.0, 2.0], "float64", False),
    "float64-requiring-grad": ([0.25], "float64", True),
    "int32": ([1, 2], "int32", False),
    "uint8": ([0, 255], "uint8", False),
    "float16": ([0.5, 1.0], "float16", False),
    "matrix": ([[1.0, -2.5, 3.25], [10.0, 0.0, -0.125], [7.0, 8.0, 9.0]], None, False),
    "3d": (np.arange(8.0).reshape(2, 2, 2), "float32", False),
    "scientific": ([1e-8, 1.0, 1e8], None, False),
    "small": ([1e-5, 2e-5], None, False),
    "integral-floats": ([1.0, 100.0, -7.0], None, False),
    "rounding": ([0.123456789, 2.0 / 3.0], None, False),
    "non-finite": ([float("nan"), float("inf"), -float("inf"), 1.0], None, False),
    "wrapped-row": (np.arange(30.0), "float32", False),
    "summarised": (np.arange(2000.0), "float32", False),
    "summarised-2d": (np.arange(3000).reshape(100, 30), "int64", False),
}


def expected_repr(values, dtype, requires_grad) -> str:
    """PyTorch's repr of the same tensor, with TensorWeaver's dtype spelling."""
    theirs = make(torch, values, dtype, requires_grad)
    return re.sub(r"dtype=torch\.", "dtype=tw.", repr(theirs))


@pytest.mark.parametrize("name", CASES.keys())
def test_repr_like_torch(name):
    values, dtype, requires_grad = CASES[name]
    with tw.device("numpy"):
        t = make(tw, values, dtype, requires_grad)
    assert repr(t) == expected_repr(values, dtype, requires_grad)
    assert str(t) == repr(t)


@pytest.fixture
def default_float64() -> Iterator[None]:
    tw.set_default_dtype(tw.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        tw.set_default_dtype(tw.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dtype_suffix_follows_the_default_dtype(default_float64, dtype):
    with tw.device("numpy"):
        t = make(tw, [1.0, 2.5], dtype)
    assert repr(t) == expected_repr([1.0, 2.5], dtype, False)


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", ["floats", "0d-int", "empty-2d", "float64-requiring-grad"])
def test_repr_names_the_device_unless_numpy(backend, name):
    values, dtype, requires_grad = CASES[name]
    t = make(tw, values, dtype, requires_grad)
    expected = expected_repr(values, dtype, requires_grad)
    if backend != "numpy":
        # PyTorch's first suffix is the device's, right after the data.
        data_end = min(
            [
                expected.index(s)
                for s in (", size=", ", dtype=", ", requires_grad=")
                if s in expected
            ]
            or [len(expected) - 1]
        )
        expected = f"{expected[:data_end]}, device='{t.device}'{expected[data_end:]}"
    # A longer device name may push a suffix onto the next line, as PyTorch wraps at 80.
    assert " ".join(repr(t).split()) == " ".join(expected.split())
