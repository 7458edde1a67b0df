"""The torch plugin's ``from_host``: an array that needs no conversion skips NumPy's
conversion (and its errstate scope); every array still gives torch.tensor's values and
dtype, in memory of its own."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensorweaver.contract import dtypes
from tensorweaver_torch.backend import TORCH_DTYPES


@pytest.fixture(scope="module")
def backend():
    import tensorweaver as tw

    return tw.tensor(0.0, device="torch:cpu").backend


ARRAYS = {
    "float32 C": np.arange(12, dtype=np.float32).reshape(3, 4),
    "float32 transposed": np.arange(12, dtype=np.float32).reshape(3, 4).T,
    "float64 overflowing float32": np.array([1e300, -1e300, 3.0, np.nan]),
    "int64": np.arange(-3, 3),
    "bool": np.array([True, False]),
    "0-d": np.array(2.5, dtype=np.float32),
}


DTYPES = [dtypes.float32, dtypes.float64, dtypes.bfloat16, dtypes.int64, dtypes.bool_]
#: (inf and nan have no integer value: the core refuses them before they reach the backend)
CASES = [(n, d) for n in ARRAYS for d in DTYPES if d.kind == "f" or not n.startswith("float64")]


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=str)
def test_from_host_as_torch_tensor(backend, name: str, dtype) -> None:
    array = ARRAYS[name]
    with np.errstate(all="ignore"):  # (NumPy's own cast warns; torch's conversion does not)
        want = torch.tensor(np.asarray(array, dtype=dtype.numpy_name), dtype=TORCH_DTYPES[dtype])
    got = backend.from_host(array, dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


def test_from_host_copies_an_array_it_does_not_convert(backend) -> None:
    array = np.arange(4, dtype=np.float32)
    got = backend.from_host(array, dtypes.float32)
    array[0] = 100.0
    assert got[0].item() == 0.0
