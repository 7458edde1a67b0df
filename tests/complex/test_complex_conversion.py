"""Complex tensors leaving tensorweaver: ``item``/``tolist`` give Python complex numbers,
``numpy()`` a complex array, and ``repr``/``str`` print as PyTorch's (with ``tensorweaver.``
for ``torch.``), across value ranges, shapes and dtypes."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from complex_reference import cplx


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_item_tolist_numpy(backend: str, dtype: str) -> None:
    values = cplx((2, 3), 1)
    ours, theirs = (m.tensor(values, dtype=getattr(m, dtype)) for m in (tw, torch))
    item = ours[1, 2].item()
    assert type(item) is complex and item == theirs[1, 2].item()
    listed = ours.tolist()
    assert listed == theirs.tolist()
    assert all(type(v) is complex for row in listed for v in row)
    array = ours.numpy()
    assert array.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(array, theirs.numpy())
    assert ours.element_size() == theirs.element_size()
    assert ours.nbytes == theirs.nbytes


CASES = {
    "small": np.array([1 + 2j, -3.5 - 0.25j, 0j]),
    "integral": np.array([[1 + 0j, 2j], [-3 + 4j, 0]]),
    "wide": np.array([1e-5 + 3e6j, 12345.678 - 1j]),
    "special": np.array([complex(np.nan, 1), complex(np.inf, -np.inf), -0.0 + 0j]),
    "scalar": np.array(2.5 - 1.5j),
    "empty": np.zeros((0, 2), np.complex128),
    "large": cplx((30, 40), 2),
    "batch": cplx((2, 3, 4), 3),
}


def _without_device(text: str, t: tw.Tensor) -> str:
    return text.replace(f", device='{t.device}'", "")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_printing_like_pytorch(backend: str, case: str, dtype: str) -> None:
    values = CASES[case]
    ours, theirs = (m.tensor(values, dtype=getattr(m, dtype)) for m in (tw, torch))
    expected = repr(theirs).replace("torch.", "tensorweaver.")
    assert _without_device(repr(ours), ours) == expected
    assert _without_device(str(ours), ours) == str(theirs).replace("torch.", "tensorweaver.")


def test_printing_under_a_float64_default(backend: str) -> None:
    previous = torch.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for values in (CASES["small"], CASES["empty"]):
            for dtype in ("complex64", "complex128"):
                ours, theirs = (m.tensor(values, dtype=getattr(m, dtype)) for m in (tw, torch))
                expected = repr(theirs).replace("torch.", "tensorweaver.")
                assert _without_device(repr(ours), ours) == expected
    finally:
        torch.set_default_dtype(previous)  # tw's default is restored by the backend fixture


def test_printing_with_grad(backend: str) -> None:
    values = cplx((2,), 4)
    ours, theirs = (m.tensor(values, requires_grad=True) for m in (tw, torch))
    got = _without_device(repr(ours * 2), ours)
    expected = repr(theirs * 2).replace("torch.", "tensorweaver.")
    assert got.split("grad_fn")[0] == expected.split("grad_fn")[0]


def test_python_complex_of_a_one_element_tensor(backend: str) -> None:
    values = cplx((1,), 5)
    assert complex(tw.tensor(values)) == complex(torch.tensor(values))
