"""Keywords of the ``Tensor`` methods PyTorch writes in Python (``torch/_tensor.py``), found
by the mamba-minimal port (``tests/ports/programs/mamba_minimal.py``:
``x_and_res.split(split_size=[d, d], dim=-1)``) and a sweep of those methods' signatures
against tensorweaver's: ``split`` and ``norm`` were the two that differ.

PyTorch names ``Tensor.split``'s first argument ``split_size`` and the function's
(``torch.split``) ``split_size_or_sections``; each refuses the other's name. ``norm`` (method
and function) takes ``dtype``: the input is cast to it before the norm is taken.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

SIZES = {"sections": [2, 4], "size": 4}


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("spec", FAST)
def test_tensor_split_takes_split_size_keyword(spec: str, sizes: str) -> None:
    expected = torch.arange(12.0).reshape(2, 6).split(split_size=SIZES[sizes], dim=-1)
    with entered(spec, seed=0):
        got = tw.arange(12.0).reshape(2, 6).split(split_size=SIZES[sizes], dim=-1)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


@pytest.mark.parametrize("spec", FAST)
def test_torch_split_function_keeps_split_size_or_sections(spec: str) -> None:
    expected = torch.split(torch.arange(6.0), split_size_or_sections=[2, 4])
    with entered(spec, seed=0):
        got = tw.split(tw.arange(6.0), split_size_or_sections=[2, 4])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


NORM_CALLS = {"whole": ((), {}), "p2-dim1": ((2, 1), {}), "nuc": (("nuc",), {})}


@pytest.mark.parametrize("call", list(NORM_CALLS))
@pytest.mark.parametrize("spec", FAST)
def test_norm_takes_dtype_keyword(spec: str, call: str) -> None:
    args, kwargs = NORM_CALLS[call]
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    expected = torch.tensor(x).norm(*args, **kwargs, dtype=torch.float64)
    with entered(spec, seed=0):
        got = tw.tensor(x).norm(*args, **kwargs, dtype=tw.float64)
        function_form = tw.norm(tw.tensor(x), *args, **kwargs, dtype=tw.float64)
    assert got.dtype is tw.float64 and function_form.dtype is tw.float64
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(function_form.numpy(), expected.numpy(), rtol=1e-12)


#: (input dtype, norm arguments, dtype=) that PyTorch's norm refuses (RuntimeError).
NORM_REFUSED = {
    "narrowing": ("float32", {"p": 2, "dim": 1}, "float16"),
    "narrowing-whole": ("float64", {}, "float32"),
    "integral": ("float32", {}, "int64"),
    "complex-for-real": ("float32", {}, "complex128"),
    "real-for-complex": ("complex64", {}, "float64"),
}


@pytest.mark.parametrize("case", list(NORM_REFUSED))
@pytest.mark.parametrize("spec", FAST)
def test_norm_dtype_refusals_as_pytorch(spec: str, case: str) -> None:
    source, kwargs, target = NORM_REFUSED[case]
    x = np.arange(1.0, 7.0).reshape(2, 3).astype(source)
    with pytest.raises(RuntimeError):
        torch.tensor(x).norm(**kwargs, dtype=getattr(torch, target))
    with entered(spec, seed=0), pytest.raises(RuntimeError):
        tw.tensor(x).norm(**kwargs, dtype=getattr(tw, target))


@pytest.mark.parametrize("spec", FAST)
def test_norm_of_complex_with_complex_dtype_is_real(spec: str) -> None:
    x = (np.arange(1.0, 7.0) * (1 - 2j)).astype(np.complex64)
    expected = torch.tensor(x).norm(p=1, dtype=torch.complex128)
    with entered(spec, seed=0):
        got = tw.tensor(x).norm(p=1, dtype=tw.complex128)
    assert got.dtype is tw.float64 and expected.dtype is torch.float64
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
